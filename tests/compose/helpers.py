"""Builders for composing tests: a small fleet, deployments with real container fields, and lookups.

`compose(...)` places the workloads with the real scheduler and renders them, so each case states
only the deployment shape it is about. `find(...)` picks one manifest by kind and name fragment.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import Fleet, Manifests, ModelCache, ModelDeployment, ModelEndpoint, ModelService, Workloads
from modelplane.api import InferenceGateway
from modelplane.compose import Rendered, Settings, render
from modelplane.scheduling import place
from tests.builders import API, NS, cluster, gpu, klass, memory_at_least, pool

H100 = klass("h100", gpu(memory="81559Mi", count=8))
FLEET = Fleet(clusters=(cluster("gpu-a", pool("h100", "h100", nodes=8), labels={"zone": "a"}),
                        cluster("gpu-b", pool("h100", "h100", nodes=8), labels={"zone": "b"})),
              classes=(H100,),
              gateway=InferenceGateway.model_validate({"apiVersion": API, "kind": "InferenceGateway",
                                                       "metadata": {"name": "fleet"},
                                                       "spec": {"cluster": "gpu-a", "plainHTTP": True}}))


def container(image: str = "vllm/vllm-openai:v0.23.0", *, args: list[str] | None = None,
              command: list[str] | None = None, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "engine", "image": image}
    if args is not None:
        spec["args"] = args
    if command is not None:
        spec["command"] = command
    if env is not None:
        spec["env"] = env
    return spec


def member(role: str = "Standalone", *, claims: bool = True, count: int = 1, nodes: int | None = None,
           labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
           **container_fields: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [container(**container_fields)]}}
    if labels or annotations:
        template["metadata"] = {"labels": labels or {}, "annotations": annotations or {}}
    spec: dict[str, Any] = {"role": role, "template": template}
    if claims:
        spec["nodeSelector"] = {"devices": [{"name": "gpu", "count": count,
                                             "selectors": [{"cel": memory_at_least("40Gi")}]}]}
    if nodes is not None:
        spec["worker"] = {"nodes": nodes}
    return spec


def engine(name: str, *members: dict[str, Any], copies: int = 1, phase: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "copies": copies, "members": list(members) or [member()]}
    if phase:
        spec["phase"] = phase
    return spec


def deployment(name: str, *engines: dict[str, Any], replicas: int = 1, cache: str | None = None,
               mode: str | None = None, labels: dict[str, str] | None = None, namespace: str = NS,
               selector: dict[str, str] | None = None,
               tolerations: list[dict[str, str]] | None = None) -> ModelDeployment:
    spec: dict[str, Any] = {"replicas": replicas, "engines": list(engines) or [engine(name)]}
    if cache:
        spec["modelCacheRef"] = {"name": cache}
    if mode:
        spec["serving"] = {"mode": mode}
    if selector:
        spec["clusterSelector"] = {"matchLabels": selector}
    if tolerations:
        spec["tolerations"] = tolerations
    return ModelDeployment.model_validate({"apiVersion": API, "kind": "ModelDeployment",
                                           "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                                           "spec": spec})


def model_cache(name: str, *, selector: dict[str, str] | None = None, secret: bool = True) -> ModelCache:
    hf: dict[str, Any] = {"repo": "org/model", "revision": "v1", "sizeGiB": 100}
    if secret:
        hf["authSecret"] = {"name": "hf-token", "key": "HF_TOKEN"}
    spec: dict[str, Any] = {"huggingFace": hf}
    if selector:
        spec["clusterSelector"] = {"matchLabels": selector}
    return ModelCache.model_validate({"apiVersion": API, "kind": "ModelCache",
                                      "metadata": {"name": name, "namespace": NS}, "spec": spec})


def service(name: str, *groups: tuple[dict[str, str], int]) -> ModelService:
    endpoints = [{"selector": {"matchLabels": labels}, "weight": weight} for labels, weight in groups]
    return ModelService.model_validate({"apiVersion": API, "kind": "ModelService",
                                        "metadata": {"name": name, "namespace": NS}, "spec": {"endpoints": endpoints}})


def external(name: str, url: str, labels: dict[str, str], rewrite: str | None = None) -> ModelEndpoint:
    spec: dict[str, Any] = {"url": url}
    if rewrite:
        spec["rewritePath"] = rewrite
    return ModelEndpoint.model_validate({"apiVersion": API, "kind": "ModelEndpoint",
                                         "metadata": {"name": name, "namespace": NS, "labels": labels}, "spec": spec})


def compose(*deployments: ModelDeployment, caches: tuple[ModelCache, ...] = (),
            services: tuple[ModelService, ...] = (), endpoints: tuple[ModelEndpoint, ...] = (),
            fleet: Fleet = FLEET, addresses: dict[str, str] | None = None,
            settings: Settings = Settings()) -> Rendered:
    work = Workloads(deployments=deployments, caches=caches, services=services, endpoints=endpoints)
    placement = place(fleet, work)
    return render(Manifests(fleet, work), placement, settings, addresses)


def everything(rendered: Rendered) -> list[dict]:
    return [m for manifests in rendered.clusters.values() for m in manifests] + list(rendered.gateway)


def find(manifests: list[dict] | tuple[dict, ...], kind: str, fragment: str = "") -> dict:
    found = [m for m in manifests if m["kind"] == kind and fragment in m["metadata"]["name"]]
    assert len(found) == 1, f"{len(found)} {kind} named like {fragment!r}: {[m['metadata']['name'] for m in found]}"
    return found[0]


def kinds(manifests: list[dict] | tuple[dict, ...]) -> list[str]:
    return sorted(m["kind"] for m in manifests)


def codes(rendered: Rendered) -> list[str]:
    """The warnings' codes, but the `plain-http-gateway` every render with FLEET's plain-HTTP gateway carries
    (tests/compose/test_secured_gateway.py tests it)."""
    return sorted(problem.code for problem in rendered.warnings if problem.code != "plain-http-gateway")
