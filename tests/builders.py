"""Builders for fleets and deployments in tests: keyword defaults, so each case says only what it tests.

Objects are built from plain manifest dicts through the real models, exactly as the loader does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelplane.api import Fleet, InferenceClass, InferenceCluster, ModelCache, ModelDeployment, Workloads

NS = "ml"
API = "modelplane.ai/v1alpha1"

FLEET_CA = (Path(__file__).parent / "data" / "fleet-ca.pem").read_text()
"""A real self-signed CA certificate (public; the key was never kept): the one examples/multi-cloud trusts."""


def memory_at_least(quantity: str) -> str:
    return f'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{quantity}")) >= 0'


def gpu(memory: str = "81920Mi", count: int = 8, arch: str = "Hopper", name: str = "gpu", claim: str = "DRA",
        driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "claim": claim, "driver": driver, "count": count,
                              "attributes": {"architecture": {"string": arch}},
                              "capacity": {"memory": {"value": memory}}}
    if claim == "DRA":
        device["deviceClassName"] = driver
    return device


def fabric_device(kind: str = "InfiniBand") -> dict[str, Any]:
    return {"name": "fabric", "claim": "Synthetic", "driver": "fabric.modelplane.ai",
            "attributes": {"type": {"string": kind}}}


def klass(name: str, *devices: dict[str, Any]) -> InferenceClass:
    return InferenceClass.model_validate({"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name},
                                          "spec": {"devices": list(devices) or [gpu()]}})


def pool(name: str = "gpu", cls: str = "h100", nodes: int = 1, max_nodes: int | None = None,
         fabric: str | None = None, fabric_id: str | None = None, sharing: str | None = None,
         zero_downtime: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "className": cls, "nodeCount": nodes}
    if sharing:
        spec["sharing"] = sharing
    if zero_downtime:
        spec["zeroDowntimeRollouts"] = True
    if max_nodes is not None:
        spec["maxNodeCount"] = max_nodes
    if fabric:
        spec["fabric"] = {"type": fabric, **({"infiniband": {"fabric": fabric_id}} if fabric_id else {})}
    return spec


def exclusive_pool(name: str = "gpu", **kwargs: Any) -> dict[str, Any]:
    """A pool whose every pod holds a whole node (`sharing: Exclusive`): cases that count nodes."""
    return pool(name, sharing="Exclusive", **kwargs)


def cluster(name: str, *pools: dict[str, Any], labels: dict[str, str] | None = None,
            taints: list[dict[str, str]] | None = None) -> InferenceCluster:
    return InferenceCluster.model_validate({
        "apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": name, "labels": labels or {}},
        "spec": {"cluster": {"source": "Existing", "existing": {"kubeconfig": f"{name}Kubeconfig"}},
                 "taints": taints or [], "nodePools": list(pools) or [pool()], "gateway": GATEWAY_KEYS}})


GATEWAY_KEYS = {"auth": {"apiKeysSecret": "inference-api-keys"}}
"""Every built cluster's gateway requires API keys: the fleets built here have no InferenceGateway."""


def request(*selectors: str, count: int = 1, name: str = "gpu") -> dict[str, Any]:
    return {"name": name, "count": count, "selectors": [{"cel": s} for s in selectors or (memory_at_least("20Gi"),)]}


def member(role: str = "Standalone", *requests: dict[str, Any], nodes: int | None = None,
           claims: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"role": role, "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}}}
    if claims:
        spec["nodeSelector"] = {"devices": list(requests) or [request()]}
    if nodes is not None:
        spec["worker"] = {"nodes": nodes}
    return spec


def standalone(*requests: dict[str, Any], name: str = "engine", copies: int = 1, phase: str | None = None) -> dict[str, Any]:
    engine: dict[str, Any] = {"name": name, "copies": copies, "members": [member("Standalone", *requests)]}
    if phase:
        engine["phase"] = phase
    return engine


def gang(*requests: dict[str, Any], workers: int = 1, name: str = "engine", copies: int = 1,
         leader_claims: bool = True) -> dict[str, Any]:
    return {"name": name, "copies": copies,
            "members": [member("Leader", *requests, claims=leader_claims), member("Worker", *requests, nodes=workers)]}


def deployment(name: str, *engines: dict[str, Any], replicas: int = 1, selector: dict[str, str] | None = None,
               tolerations: list[dict[str, str]] | None = None, cache: str | None = None,
               mode: str | None = None, namespace: str = NS) -> ModelDeployment:
    spec: dict[str, Any] = {"replicas": replicas, "engines": list(engines) or [standalone()]}
    if selector:
        spec["clusterSelector"] = {"matchLabels": selector}
    if tolerations:
        spec["tolerations"] = tolerations
    if cache:
        spec["modelCacheRef"] = {"name": cache}
    if mode:
        spec["serving"] = {"mode": mode}
    return ModelDeployment.model_validate({"apiVersion": API, "kind": "ModelDeployment",
                                           "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def cache(name: str, selector: dict[str, str] | None = None, namespace: str = NS) -> ModelCache:
    spec: dict[str, Any] = {"huggingFace": {"repo": "org/model", "sizeGiB": 10}}
    if selector:
        spec["clusterSelector"] = {"matchLabels": selector}
    return ModelCache.model_validate({"apiVersion": API, "kind": "ModelCache",
                                      "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def fleet(*clusters: InferenceCluster, classes: tuple[InferenceClass, ...] | None = None) -> Fleet:
    return Fleet(clusters=clusters, classes=classes if classes is not None else (klass("h100"),))


def workloads(*deployments: ModelDeployment, caches: tuple[ModelCache, ...] = ()) -> Workloads:
    return Workloads(deployments=deployments, caches=caches)


# A ModelDeployment `ml-team/huge` whose selector asks for more memory than any GPU has (1000Gi),
# for tests that run a whole program (mocks and the real engine) and expect it reported as short.
UNPLACEABLE = """apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata: {name: huge, namespace: ml-team}
spec:
  engines:
  - name: huge
    members:
    - nodeSelector:
        devices:
        - name: gpu
          selectors:
          - cel: device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1000Gi")) >= 0
      template:
        spec:
          containers: [{name: engine, image: "vllm/vllm-openai:v0.23.0"}]
"""
