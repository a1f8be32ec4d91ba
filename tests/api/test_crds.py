"""The generated CRDs: every field of every kind with its description, structural, the subresources and
columns `kubectl` and KEDA rely on, every example accepted, and the schema-level bad inputs refused
both by the schema (as an API server would: `crd_schema`) and by the loader, which stays the authority.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from modelplane.api import ManifestErrors, load_sources
from modelplane.api.crds import SERVED_KINDS, custom_resource_definitions, served_kind
from modelplane.api.crds.rules import RULES
from modelplane.api.crds.schema import models_by_name
from tests.api import crd_schema

ROOT = Path(__file__).resolve().parents[2]
MANIFEST_DIRS = (ROOT / "examples", ROOT / "tests" / "e2e" / "fleet", ROOT / "tests" / "e2e" / "control_cluster")
STRUCTURAL_FORBIDDEN = ("$ref", "anyOf", "allOf", "oneOf", "not", "title", "nullable", "const", "$defs")


def crd(kind: str) -> dict[str, Any]:
    return next(c for c in custom_resource_definitions() if c["spec"]["names"]["kind"] == kind)


def openapi(kind: str) -> dict[str, Any]:
    return crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_one_crd_per_kind_with_its_scope_and_short_name() -> None:
    got = [(c["metadata"]["name"], c["spec"]["scope"], c["spec"]["names"]["shortNames"], c["spec"]["names"]["categories"])
           for c in custom_resource_definitions()]
    assert got == [
        ("inferenceclasses.modelplane.ai", "Cluster", ["icl"], ["modelplane"]),
        ("inferenceclusters.modelplane.ai", "Cluster", ["ic"], ["modelplane"]),
        ("inferencegateways.modelplane.ai", "Cluster", ["ig"], ["modelplane"]),
        ("modeldeployments.modelplane.ai", "Namespaced", ["md"], ["modelplane"]),
        ("modelcaches.modelplane.ai", "Namespaced", ["mc"], ["modelplane"]),
        ("modelservices.modelplane.ai", "Namespaced", ["ms"], ["modelplane"]),
        ("modelendpoints.modelplane.ai", "Namespaced", ["me"], ["modelplane"]),
    ]


def test_generation_is_deterministic() -> None:
    assert custom_resource_definitions() == custom_resource_definitions()


def test_model_deployment_serves_scale_and_status_for_kubectl_and_keda() -> None:
    version = crd("ModelDeployment")["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}}
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["replicas"]["type"] == "integer" and status["selector"]["type"] == "string"
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Ready", ".status.ready"), ("Clusters", ".status.clusters"), ("Age", ".metadata.creationTimestamp")]


@pytest.mark.parametrize("kind", ["InferenceClass", "InferenceCluster", "InferenceGateway", "ModelCache",
                                  "ModelEndpoint", "ModelService"])
def test_every_kind_serves_the_status_subresource_and_its_status_has_conditions(kind: str) -> None:
    """The control plane writes a refusal to the object's own status (ModelDeployment also serves scale, above)."""
    version = crd(kind)["spec"]["versions"][0]
    assert version.get("subresources") == {"status": {}}
    assert version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"]["type"] == "array"


def fields(model: type[BaseModel], path: str = "") -> Iterator[tuple[str, type[BaseModel], str]]:
    """(path, model, alias) of every field below `model`, through nested models, lists and maps."""
    for name, field in model.model_fields.items():
        alias = field.alias or name
        yield f"{path}.{alias}", model, alias
        for nested in _models_in(field.annotation):
            yield from fields(nested, f"{path}.{alias}")


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [found for arg in typing.get_args(annotation) for found in _models_in(arg)]


def property_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.strip(".").split("."):
        while "properties" not in node:
            node = node.get("items") or node["additionalProperties"]
        node = node["properties"][part]
    return node


@pytest.mark.parametrize("kind", [served.kind for served in SERVED_KINDS])
def test_every_field_of_every_kind_appears_with_its_description(kind: str) -> None:
    served = served_kind(kind)
    schema = openapi(kind)
    assert schema["description"]
    checked = 0
    for top in ("spec", "status"):
        if top not in served.model.model_fields:
            continue
        for model in _models_in(served.model.model_fields[top].annotation):
            for path, owner, alias in fields(model, f".{top}"):
                node = property_at(schema, path)
                assert node.get("description"), f"{kind}{path} ({owner.__name__}.{alias}) has no description"
                checked += 1
    assert checked >= 2


def test_kubectl_explain_reads_like_the_seeds_api_reference() -> None:
    engines = property_at(openapi("ModelDeployment"), ".spec.engines")
    copies = engines["items"]["properties"]["copies"]
    assert copies["description"].startswith("How many identical copies of this engine to run per replica")
    assert (copies["minimum"], copies["maximum"], copies["default"]) == (1, 64, 1)
    role = property_at(openapi("ModelDeployment"), ".spec.engines.members.role")
    assert role["enum"] == ["Standalone", "Leader", "Worker"] and role["default"] == "Standalone"
    assert engines["items"]["required"] == ["name", "members"]


def walk(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(schema, dict):
        yield path, schema
        for name, prop in schema.get("properties", {}).items():
            yield from walk(prop, f"{path}.{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                yield from walk(schema[key], f"{path}[{key}]")


@pytest.mark.parametrize("kind", [served.kind for served in SERVED_KINDS])
def test_the_schema_is_structural(kind: str) -> None:
    for path, node in walk(openapi(kind)):
        assert node.get("type") in ("object", "array", "string", "integer", "boolean"), f"{path}: no type"
        assert not set(STRUCTURAL_FORBIDDEN) & set(node), f"{path}: {set(STRUCTURAL_FORBIDDEN) & set(node)}"
        assert not ("properties" in node and "additionalProperties" in node), path
        if "default" in node:
            assert crd_schema.jsonschema.Draft7Validator(node).is_valid(node["default"]), f"{path}: bad default"


def test_every_rule_compiles_and_sits_on_its_model() -> None:
    rules = [(path, rule) for c in custom_resource_definitions()
             for path, node in walk(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
             for rule in node.get("x-kubernetes-validations", ())]
    for _, rule in rules:
        crd_schema._program(rule["rule"])
    written = {rule.rule for rules_of in RULES.values() for rule in rules_of}
    assert written <= {rule["rule"] for _, rule in rules}, "a rule whose model no kind reaches"
    reachable = {m for served in SERVED_KINDS for m in models_by_name(served.model).values()}
    assert set(RULES) <= reachable


def example_objects() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for directory in MANIFEST_DIRS:
        for path in sorted(directory.rglob("*.yaml")):
            for document in yaml.safe_load_all(path.read_text()):
                if isinstance(document, dict) and str(document.get("apiVersion", "")).startswith("modelplane.ai/"):
                    found.append((f"{path.relative_to(ROOT)}:{document['kind']}/{document['metadata']['name']}",
                                  document))
    return found


EXAMPLES = example_objects()


def test_the_examples_cover_every_kind() -> None:
    assert {obj["kind"] for _, obj in EXAMPLES} == {served.kind for served in SERVED_KINDS}


@pytest.mark.parametrize("name,obj", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_every_example_object_is_accepted_by_its_schema(name: str, obj: dict[str, Any]) -> None:
    assert crd_schema.problems(obj) == []


# Schema-level bad input: each case breaks a valid object one way. The schema must refuse it with the
# given text, and the loader must refuse it too at the given path.

DEPLOYMENT = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata: {name: chat, namespace: ml-team}
spec:
  replicas: 2
  engines:
  - name: chat
    members:
    - role: Standalone
      nodeSelector:
        devices:
        - name: gpu
          selectors: [{cel: 'device.driver == "gpu.nvidia.com"'}]
      template:
        spec:
          containers: [{name: engine, image: vllm/vllm-openai:v0.23.0, env: [{name: A, value: b}]}]
""")
CLASS = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: h100}
spec:
  devices:
  - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8,
     attributes: {arch: {string: Hopper}}, capacity: {memory: {value: 80Gi}}}
""")
CLUSTER = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: east}
spec:
  cluster: {source: Existing, existing: {kubeconfig: eastKubeconfig}}
  nodePools: [{name: h100, className: h100, nodeCount: 2}]
""")
GATEWAY = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: InferenceGateway
metadata: {name: default}
spec: {cluster: east, plainHTTP: true}
""")
CACHE = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: ModelCache
metadata: {name: qwen3, namespace: ml-team}
spec: {huggingFace: {repo: Qwen/Qwen3-8B, sizeGiB: 20}}
""")
SERVICE = yaml.safe_load("""
apiVersion: modelplane.ai/v1alpha1
kind: ModelService
metadata: {name: chat, namespace: ml-team}
spec: {endpoints: [{selector: {matchLabels: {modelplane.ai/deployment: chat}}}]}
""")


@dataclass(frozen=True)
class Bad:
    name: str
    base: dict[str, Any]
    change: Callable[[dict[str, Any]], None]
    schema_says: str
    loader_says: str


def _engine(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["engines"][0]


def _member(obj: dict[str, Any]) -> dict[str, Any]:
    return _engine(obj)["members"][0]


def _leader_worker(obj: dict[str, Any]) -> None:
    leader = _member(obj)
    leader["role"] = "Leader"
    _engine(obj)["members"].append({**copy.deepcopy(leader), "role": "Standalone"})


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        node: Any = obj
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return change


BAD = [
    Bad("replicas below zero", DEPLOYMENT, _set("spec.replicas", -1), "minimum", "spec.replicas: must be at least 0"),
    Bad("an unknown field (kubectl's server-side field validation)", DEPLOYMENT, _set("spec.replica", 1),
        "Additional properties", "unknown field 'replica'"),
    Bad("a duplicate engine name", DEPLOYMENT, lambda o: o["spec"]["engines"].append(copy.deepcopy(_engine(o))),
        "Duplicate value", "duplicate engine name 'chat'"),
    Bad("PrefillDecode with one engine", DEPLOYMENT, _set("spec.serving", {"mode": "PrefillDecode"}),
        "PrefillDecode needs exactly two engines", "PrefillDecode needs exactly two engines"),
    Bad("a phase on a Unified deployment", DEPLOYMENT, _set("spec.engines.0.phase", "Prefill"),
        "phase may only be set when serving.mode is PrefillDecode", "phase may only be set"),
    Bad("a Leader without a Worker", DEPLOYMENT, _leader_worker, "exactly one Standalone member, or one Leader and one Worker",
        "an engine is exactly one Standalone member"),
    Bad("worker settings on a Standalone member", DEPLOYMENT, _set("spec.engines.0.members.0.worker", {"nodes": 2}),
        "worker may only be set on a Worker member", "worker may only be set on a Worker member"),
    Bad("an engine without a device request", DEPLOYMENT, lambda o: _member(o).pop("nodeSelector"),
        "at least one member of an engine must carry a nodeSelector", "must carry a nodeSelector"),
    Bad("a container not named engine", DEPLOYMENT, _set("spec.engines.0.members.0.template.spec.containers.0.name", "vllm"),
        "must be named 'engine'", "must be named 'engine'"),
    Bad("an env var with value and valueFrom", DEPLOYMENT,
        _set("spec.engines.0.members.0.template.spec.containers.0.env.0.valueFrom", {"fieldRef": {"fieldPath": "status.podIP"}}),
        "set value or valueFrom, not both", "set value or valueFrom, not both"),
    Bad("a valueFrom with two sources", DEPLOYMENT,
        _set("spec.engines.0.members.0.template.spec.containers.0.env.0", {"name": "A", "valueFrom": {
            "fieldRef": {"fieldPath": "status.podIP"}, "secretKeyRef": {"name": "s", "key": "k"}}}),
        "has too many properties", "valueFrom sets exactly one of"),
    Bad("an Equal toleration without a key", DEPLOYMENT, _set("spec.tolerations", [{"operator": "Equal", "value": "x"}]),
        "an Equal toleration must set a key", "an Equal toleration must set a key"),
    Bad("an Exists toleration with a value", DEPLOYMENT, _set("spec.tolerations", [{"key": "k", "operator": "Exists", "value": "x"}]),
        "an Exists toleration must not set a value", "an Exists toleration must not set a value"),
    Bad("a deployment name that starts with a digit", DEPLOYMENT, _set("metadata.name", "7b-chat"),
        "must start with a letter", "must start with a letter"),
    Bad("a device count over 64", DEPLOYMENT, _set("spec.engines.0.members.0.nodeSelector.devices.0.count", 65),
        "maximum", "must be at most 64"),
    Bad("a DRA device without its DeviceClass", CLASS, lambda o: o["spec"]["devices"][0].pop("deviceClassName"),
        "deviceClassName is required when claim is DRA", "deviceClassName is required when claim is DRA"),
    Bad("an attribute with two values", CLASS, _set("spec.devices.0.attributes.arch", {"string": "Hopper", "int": 9}),
        "has too many properties", "exactly one of string, version, bool, int"),
    Bad("an attribute with no value", CLASS, _set("spec.devices.0.attributes.arch", {}),
        "should be non-empty", "exactly one of string, version, bool, int"),
    Bad("minNodeCount above maxNodeCount", CLUSTER, _set("spec.nodePools.0", {"name": "h100", "className": "h100",
        "nodeCount": 2, "minNodeCount": 3, "maxNodeCount": 2}), "minNodeCount is above maxNodeCount", "minNodeCount 3 is above"),
    Bad("nodeCount above maxNodeCount", CLUSTER, _set("spec.nodePools.0.maxNodeCount", 1),
        "nodeCount is above maxNodeCount", "nodeCount 2 is above maxNodeCount 1"),
    Bad("both a kubeconfig key and a Secret", CLUSTER, _set("spec.cluster.existing.secretRef", {"name": "east"}),
        "set kubeconfig (a Pulumi secret config key) or secretRef", "not both"),
    Bad("a block another source takes", CLUSTER, _set("spec.cluster.gke", {"region": "us-central1"}),
        "the gke block is set exactly when source is GKE", "the gke block belongs to source GKE"),
    Bad("a Capacity Block off EKS", CLUSTER, _set("spec.nodePools.0.capacityBlock", {"capacityReservationId": "cr-0abc"}),
        "capacityBlock is for EKS clusters", "capacityBlock is for EKS clusters"),
    Bad("InfiniBand settings on a pool without InfiniBand", CLUSTER,
        _set("spec.nodePools.0.fabric", {"type": "EFA", "infiniband": {"fabric": "f1"}}),
        "infiniband is only allowed when type is InfiniBand", "infiniband is only allowed when type is InfiniBand"),
    Bad("a duplicate pool", CLUSTER, lambda o: o["spec"]["nodePools"].append(copy.deepcopy(o["spec"]["nodePools"][0])),
        "Duplicate value", "duplicate pool name 'h100'"),
    Bad("a duplicate taint", CLUSTER, _set("spec.taints", [{"key": "k", "effect": "NoSchedule"}] * 2),
        "Duplicate value", "duplicate taint k:NoSchedule"),
    Bad("a cluster name GKE cannot take", CLUSTER, _set("metadata.name", "a" * 41),
        "at most 40 characters, starting with a letter", "cannot name a cluster"),
    Bad("traefik settings on an Envoy Gateway", GATEWAY, _set("spec.traefik", {"version": "40.2.0"}),
        "traefik is only allowed when backend is Traefik", "traefik is only allowed when backend is Traefik"),
    Bad("MetalLB without its address pool", GATEWAY, _set("spec", {"cluster": "east", "backend": "Traefik",
        "plainHTTP": True, "traefik": {"loadBalancer": "MetalLB"}}), "metallb.addressPool is set exactly when loadBalancer is MetalLB",
        "metallb.addressPool is required when loadBalancer is MetalLB"),
    Bad("a gateway that asks neither for HTTPS nor for plain HTTP", GATEWAY, _set("spec", {"cluster": "east"}),
        "tls is required unless plainHTTP is true", "spec.tls: tls is required"),
    Bad("a certificate beside plainHTTP", GATEWAY, _set("spec.tls", {"certificateSecret": "fleet-cert"}),
        "tls is required unless plainHTTP is true, and contradicts it", "tls contradicts plainHTTP: true"),
    Bad("API keys on Traefik", GATEWAY, _set("spec", {"cluster": "east", "backend": "Traefik", "plainHTTP": True,
        "auth": {"apiKeysSecret": "keys"}}), "API keys need backend EnvoyGateway", "API keys need backend EnvoyGateway"),
    Bad("a service endpoint that selects nothing", SERVICE, _set("spec.endpoints.0.selector.matchLabels", {}),
        "matchLabels must name at least one label", "matchLabels must name at least one label"),
    # Syntax the loader parses, which the CRDs check with a pattern (issue 22: `80GB` was admitted).
    Bad("a capacity that is not a quantity", CLASS, _set("spec.devices.0.capacity.memory.value", "80GB"),
        "does not match", "'80GB' is not a Kubernetes quantity"),
    Bad("a version attribute that is not a semantic version", CLASS, _set("spec.devices.0.attributes.arch",
        {"version": "9.0"}), "does not match", "'9.0' is not a semantic version"),
    Bad("a taint key with a space", CLUSTER, _set("spec.taints", [{"key": "gpu type", "effect": "NoSchedule"}]),
        "does not match", "taint key"),
    Bad("an environment variable name starting with a digit", DEPLOYMENT,
        _set("spec.engines.0.members.0.template.spec.containers.0.env.0.name", "1A"), "does not match",
        "is not a valid environment variable name"),
    Bad("an image with an uppercase path", DEPLOYMENT,
        _set("spec.engines.0.members.0.template.spec.containers.0.image", "vllm/vLLM-openai:v0.23.0"), "does not match",
        "is not an image reference"),
    Bad("a Hugging Face repository without its owner", CACHE, _set("spec.huggingFace.repo", "Qwen3-8B"),
        "does not match", "is not a Hugging Face repository id"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_schema_level_bad_input_is_refused_by_the_schema_and_by_the_loader(case: Bad) -> None:
    obj = copy.deepcopy(case.base)
    assert crd_schema.problems(obj) == [], "the base object is valid"
    case.change(obj)
    found = crd_schema.problems(obj)
    assert any(case.schema_says in problem for problem in found), found
    fleet = [document for document in (CLASS, CLUSTER) if document is not case.base]
    text = "\n---\n".join(yaml.safe_dump(document) for document in (*fleet, obj))
    with pytest.raises(ManifestErrors) as refused:
        load_sources([("bad.yaml", text)])
    assert any(case.loader_says in str(problem) for problem in refused.value.errors), refused.value.errors


def test_modelplane_crds_prints_them_as_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    from modelplane.cli import main

    assert main(["crds"]) == 0
    printed = capsys.readouterr().out
    assert list(yaml.safe_load_all(printed)) == custom_resource_definitions()
    assert main(["crds"]) == 0 and capsys.readouterr().out == printed, "byte-stable"
