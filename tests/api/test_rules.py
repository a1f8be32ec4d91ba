"""Every validation rule of the API (issue 2), each with a bad manifest and its exact message.

Messages are pinned whole: file, line, object, field path and the sentence that says what is wrong
and what is allowed. Each case edits one line of a valid manifest set, so the line is easy to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from textwrap import indent

import pytest

from modelplane.api import ManifestErrors, Severity, load_sources
from tests.builders import FLEET_CA

CLASS = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: h100
spec:
  provisioning:
    provider: GKE
    gke:
      machineType: a3-highgpu-8g
      accelerator: {type: nvidia-h100-80gb, count: 8}
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    count: 8
    attributes:
      architecture: {string: Hopper}
      cudaComputeCapability: {version: 9.0.0}
    capacity:
      memory: {value: 81559Mi}
"""

CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata:
  name: gke-a
  labels: {region: us}
spec:
  cluster:
    source: GKE
    gke: {region: us-central1}
  taints:
  - {key: dedicated, value: frontier, effect: NoSchedule}
  nodePools:
  - name: h100
    className: h100
    nodeCount: 1
    maxNodeCount: 4
"""

DEPLOYMENT = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: m
  namespace: ml
spec:
  replicas: 1
  modelCacheRef: {name: weights}
  serving: {mode: Unified}
  engines:
  - name: e
    copies: 1
    members:
    - role: Leader
      nodeSelector:
        devices:
        - name: gpu
          count: 8
          selectors:
          - cel: device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0
      template:
        metadata: {labels: {team: a}}
        spec: {containers: [{name: engine, image: vllm, env: [{name: A, value: b}]}]}
    - role: Worker
      worker: {nodes: 1}
      nodeSelector:
        devices:
        - name: gpu
          count: 8
          selectors:
          - cel: device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0
      template:
        spec: {containers: [{name: engine, image: vllm}]}
"""

CACHE = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelCache
metadata:
  name: weights
  namespace: ml
spec:
  huggingFace: {repo: Qwen/Qwen3-8B, sizeGiB: 20}
"""

GATEWAY = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceGateway
metadata:
  name: fleet
spec:
  cluster: gke-a
  tls: {certificateSecret: fleet-tls}
  clusterTLS:
    certificateSecret: cluster-tls
    domain: clusters.example.com
    clientCertificateSecret: fleet-client
    caCertificates: |
""" + indent(FLEET_CA, " " * 6)

SERVICE = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelService
metadata:
  name: s
  namespace: ml
spec:
  endpoints:
  - selector: {matchLabels: {modelplane.ai/deployment: m}}
    weight: 1
"""

FILES = {"class.yaml": CLASS, "cluster.yaml": CLUSTER, "deployment.yaml": DEPLOYMENT, "cache.yaml": CACHE,
         "gateway.yaml": GATEWAY, "service.yaml": SERVICE}


def report(files: dict[str, str]) -> list[str]:
    """Every problem (errors and warnings) the loader reports, as the user sees them."""
    try:
        manifests = load_sources(sorted(files.items()))
    except ManifestErrors as errors:
        return [str(p) for p in (*errors.warnings, *errors.errors)]
    return [str(p) for p in manifests.warnings]


def edit(file: str, old: str, new: str, count: int = 1, extra: dict[str, str] | None = None) -> dict[str, str]:
    text = FILES[file]
    assert old in text, f"{old!r} not in {file}"
    return {**FILES, file: text.replace(old, new, count), **(extra or {})}


def test_the_base_set_is_valid() -> None:
    assert report(FILES) == []


@dataclass
class Rule:
    name: str
    files: dict[str, str]
    want: list[str]


D = "deployment.yaml"
MD = "ModelDeployment ml/m"
RULES = [
    Rule("an engine is one Standalone, or a Leader and a Worker",
         edit(D, "    - role: Worker", "    - role: Leader"),
         [f"deployment.yaml:13: {MD}: spec.engines[0].members: an engine is exactly one Standalone member, or "
          "one Leader and one Worker; got [Leader, Leader]"]),
    Rule("worker is only allowed on a Worker member",
         edit(D, "    - role: Leader\n", "    - role: Leader\n      worker: {nodes: 1}\n"),
         [f"deployment.yaml:15: {MD}: spec.engines[0].members[0].worker: worker may only be set on a Worker "
          "member, not a Leader"]),
    Rule("at least one member per engine carries a nodeSelector",
         {**FILES, D: DEPLOYMENT.replace("      nodeSelector:\n        devices:\n        - name: gpu\n          count: 8\n"
                                         "          selectors:\n          - cel: device.capacity[\"gpu.nvidia.com\"]"
                                         ".memory.compareTo(quantity(\"40Gi\")) >= 0\n", "")},
         [f"deployment.yaml:13: {MD}: spec.engines[0].members: at least one member of an engine must carry a "
          "nodeSelector requesting devices (a GPU request is the only path to a GPU)"]),
    Rule("PrefillDecode needs exactly a Prefill and a Decode engine",
         edit(D, "serving: {mode: Unified}", "serving: {mode: PrefillDecode}"),
         [f"deployment.yaml:10: {MD}: spec.engines: serving.mode PrefillDecode needs exactly two engines, one "
          "with phase: Prefill and one with phase: Decode; got phases [-]"]),
    Rule("phase is forbidden outside PrefillDecode",
         edit(D, "    copies: 1\n", "    copies: 1\n    phase: Prefill\n"),
         [f"deployment.yaml:13: {MD}: spec.engines[0].phase: phase may only be set when serving.mode is "
          "PrefillDecode"]),
    Rule("a gang without a modelCacheRef loads with a warning",
         edit(D, "  modelCacheRef: {name: weights}\n", ""),
         [f"deployment.yaml:10: warning: {MD}: spec.engines[0]: engine 'e' spans several nodes but the "
          "deployment has no spec.modelCacheRef: every pod of the gang will download the weights itself; add a "
          "ModelCache and reference it"]),
    Rule("engine names are DNS labels",
         edit(D, "  - name: e\n", "  - name: Engine_1\n"),
         [f"deployment.yaml:11: {MD}: spec.engines[0].name: 'Engine_1' is not a DNS label: use at most 63 "
          "lowercase letters, digits and '-', starting and ending with a letter or digit"]),
    Rule("a deployment's name starts with a letter (it prefixes Service names)",
         edit(D, "  name: m\n", "  name: 70b\n"),
         ["deployment.yaml:4: ModelDeployment ml/70b: metadata.name: '70b' must start with a letter: it prefixes "
          "Kubernetes Service names"]),
    Rule("copies are positive",
         edit(D, "copies: 1", "copies: 0"),
         [f"deployment.yaml:12: {MD}: spec.engines[0].copies: must be at least 1; got int 0"]),
    Rule("worker.nodes are bounded",
         edit(D, "worker: {nodes: 1}", "worker: {nodes: 64}"),
         [f"deployment.yaml:25: {MD}: spec.engines[0].members[1].worker.nodes: must be at most 63; got int 64"]),
    Rule("replicas are not negative (0 scales to zero)",
         edit(D, "replicas: 1", "replicas: -1"),
         [f"deployment.yaml:7: {MD}: spec.replicas: must be at least 0; got int -1"]),
    Rule("replicas 0 is valid: the deployment is scaled to zero",
         edit(D, "replicas: 1", "replicas: 0"), []),
    Rule("replicas have no upper bound beyond what the fleet holds",
         edit(D, "replicas: 1", "replicas: 100000"), []),
    Rule("user labels may not use a label key Modelplane sets",
         edit(D, "labels: {team: a}", "labels: {modelplane.ai/pool: a}"),
         [f"deployment.yaml:22: {MD}: spec.engines[0].members[0].template.metadata.labels: label key "
          "'modelplane.ai/pool' is one Modelplane sets itself; use another key (reserved: modelplane.ai/cache, "
          "modelplane.ai/cluster, modelplane.ai/component, modelplane.ai/deployment, modelplane.ai/engine, "
          "modelplane.ai/gpu, modelplane.ai/pool, modelplane.ai/replica-index, modelplane.ai/role, "
          "modelplane.ai/service, modelplane.ai/serving)"]),
    Rule("unknown fields are errors, naming what is allowed",
         edit(D, "    copies: 1\n", "    copy: 1\n"),
         [f"deployment.yaml:12: {MD}: spec.engines[0].copy: unknown field 'copy'; allowed here: copies, members, "
          "name, phase"]),
    Rule("the single container is named engine",
         edit(D, "[{name: engine, image: vllm}]", "[{name: vllm, image: vllm}]"),
         [f"deployment.yaml:33: {MD}: spec.engines[0].members[1].template.spec.containers[0].name: the container "
          "is named 'vllm'; the single container must be named 'engine' (the inference engine)"]),
    Rule("a modelCacheRef names a ModelCache in the same namespace",
         edit(D, "{name: weights}", "{name: other}"),
         [f"deployment.yaml:8: {MD}: spec.modelCacheRef.name: ModelCache 'other' is not defined in namespace "
          "'ml' (defined there: weights)"]),
    Rule("a nodePool's className names a loaded InferenceClass",
         edit("cluster.yaml", "className: h100", "className: a100"),
         ["cluster.yaml:14: InferenceCluster gke-a: spec.nodePools[0].className: InferenceClass 'a100' is not "
          "defined (defined: h100)"]),
    Rule("a GKE pool's class says how GKE provisions it",
         edit("class.yaml", "  provisioning:\n    provider: GKE\n    gke:\n      machineType: a3-highgpu-8g\n"
                            "      accelerator: {type: nvidia-h100-80gb, count: 8}\n", ""),
         ["cluster.yaml:14: InferenceCluster gke-a: spec.nodePools[0].className: InferenceClass 'h100' has no "
          "provisioning for GKE: a GKE cluster creates its pools from the class's spec.provisioning.gke (machine "
          "shape and accelerator)"]),
    Rule("kind, namespace and name identify one object",
         {**FILES, "copy.yaml": CACHE},
         ["copy.yaml:4: ModelCache ml/weights: metadata.name: duplicate ModelCache 'weights': already defined at "
          "cache.yaml:1; names are unique per kind and namespace"]),
    Rule("a fleet has at most one InferenceGateway",
         {**FILES, "gateway2.yaml": GATEWAY.replace("name: fleet", "name: second")},
         ["gateway2.yaml:4: InferenceGateway second: metadata.name: a fleet has one InferenceGateway; 'fleet' is "
          "already defined at gateway.yaml:1"]),
    Rule("the gateway's cluster is a defined InferenceCluster",
         edit("gateway.yaml", "cluster: gke-a", "cluster: nowhere"),
         ["gateway.yaml:6: InferenceGateway fleet: spec.cluster: InferenceCluster 'nowhere' is not defined "
          "(defined: gke-a)"]),
    Rule("a plain-HTTP fleet's clusters must say their gateways take every caller",
         {**FILES, "gateway.yaml": GATEWAY.split("  tls:")[0] + "  plainHTTP: true\n"},
         ["cluster.yaml:6: InferenceCluster gke-a: spec.gateway.publicInference: the cluster's inference Gateway "
          "would accept every caller unauthenticated: InferenceGateway fleet reaches the clusters over plain HTTP "
          "(plainHTTP: true), where no client certificate can be presented; set tls and clusterTLS with "
          "clusterTLS.clientCertificateSecret, or say spec.gateway.publicInference: true to open it on purpose"]),
    Rule("a TLS hop without the fleet gateway's client certificate leaves the clusters open",
         edit("gateway.yaml", "    clientCertificateSecret: fleet-client\n", ""),
         ["cluster.yaml:6: InferenceCluster gke-a: spec.gateway.publicInference: the cluster's inference Gateway "
          "would accept every caller unauthenticated: set clusterTLS.clientCertificateSecret (and caCertificates) on "
          "InferenceGateway fleet, so that the fleet gateway presents a client certificate the cluster's gateway "
          "requires, or say spec.gateway.publicInference: true to open it on purpose"]),
    Rule("without an InferenceGateway each cluster's gateway needs API keys",
         {name: text for name, text in FILES.items() if name not in ("gateway.yaml", "service.yaml")},
         ["cluster.yaml:6: InferenceCluster gke-a: spec.gateway: the cluster's inference Gateway would accept every "
          "caller unauthenticated: set spec.gateway.auth.apiKeysSecret (callers send an API key), or say "
          "spec.gateway.publicInference: true to open it on purpose"]),
    Rule("a cluster that opens its gateway on purpose loads, warned about by compose",
         edit("cluster.yaml", "spec:\n", "spec:\n  gateway: {publicInference: true}\n"), []),
    Rule("API keys on a cluster behind an InferenceGateway are refused",
         edit("cluster.yaml", "spec:\n", "spec:\n  gateway: {auth: {apiKeysSecret: keys}}\n"),
         ["cluster.yaml:7: InferenceCluster gke-a: spec.gateway.auth: API keys on a cluster's gateway are for "
          "fleets without an InferenceGateway: InferenceGateway fleet authenticates the hop to this cluster with its "
          "client certificate (clusterTLS.clientCertificateSecret); remove auth"]),
    Rule("API keys and publicInference contradict each other",
         edit("cluster.yaml", "spec:\n", "spec:\n  gateway: {publicInference: true, auth: {apiKeysSecret: keys}}\n"),
         ["cluster.yaml:7: InferenceCluster gke-a: spec.gateway.auth: auth contradicts publicInference: true; "
          "remove one of them"]),
    Rule("cluster-scoped kinds take no namespace",
         edit("class.yaml", "  name: h100\n", "  name: h100\n  namespace: ml\n"),
         ["class.yaml:5: InferenceClass ml/h100: metadata.namespace: InferenceClass is cluster-scoped: remove "
          "metadata.namespace"]),
    Rule("a DRA device names its DeviceClass",
         edit("class.yaml", "    deviceClassName: gpu.nvidia.com\n", ""),
         ["class.yaml:12: InferenceClass h100: spec.devices[0].deviceClassName: deviceClassName is required when "
          "claim is DRA: it names the DRA DeviceClass the pods claim this device through (e.g. gpu.nvidia.com); "
          "use claim: Synthetic for hardware without a DRA driver"]),
    Rule("an attribute sets exactly one typed value",
         edit("class.yaml", "{string: Hopper}", "{string: Hopper, bool: true}"),
         ["class.yaml:17: InferenceClass h100: spec.devices[0].attributes.architecture: an attribute sets exactly "
          "one of string, version, bool, int"]),
    Rule("a version attribute is a semantic version",
         edit("class.yaml", "{version: 9.0.0}", "{version: '9.0'}"),
         ["class.yaml:18: InferenceClass h100: spec.devices[0].attributes.cudaComputeCapability.version: '9.0' is "
          "not a semantic version (No Major.Minor.Patch elements found); write e.g. 9.0.0 or "
          "1.2.3-rc.1"]),
    Rule("a capacity is a Kubernetes quantity",
         edit("class.yaml", "{value: 81559Mi}", "{value: 80GB}"),
         ["class.yaml:20: InferenceClass h100: spec.devices[0].capacity.memory.value: '80GB' is not a Kubernetes "
          "quantity (quantities must match the regular expression "
          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'); write e.g. 80Gi, 81559Mi, 1.5G or 400"]),
    Rule("the provisioning block matches the provider",
         edit("class.yaml", "provider: GKE", "provider: EKS"),
         ["class.yaml:8: InferenceClass h100: spec.provisioning.gke: the gke block belongs to provider GKE; "
          "provider EKS takes the eks block"]),
    Rule("the cluster block matches the source",
         edit("cluster.yaml", "source: GKE", "source: EKS"),
         ["cluster.yaml:9: InferenceCluster gke-a: spec.cluster.gke: the gke block belongs to source GKE; "
          "source EKS takes the eks block"]),
    Rule("nodeCount may be zero, but not above maxNodeCount",
         edit("cluster.yaml", "nodeCount: 1", "nodeCount: 5"),
         ["cluster.yaml:15: InferenceCluster gke-a: spec.nodePools[0].nodeCount: nodeCount 5 is above "
          "maxNodeCount 4"]),
    Rule("a taint key appears once per effect",
         edit("cluster.yaml", "  - {key: dedicated, value: frontier, effect: NoSchedule}\n",
              "  - {key: dedicated, value: frontier, effect: NoSchedule}\n  - {key: dedicated, effect: NoSchedule}\n"),
         ["cluster.yaml:12: InferenceCluster gke-a: spec.taints[1]: duplicate taint dedicated:NoSchedule (also at "
          "index 0); a key may appear once per effect"]),
    Rule("an Equal toleration sets a key",
         edit(D, "  serving: {mode: Unified}\n", "  serving: {mode: Unified}\n  tolerations: [{operator: Equal, value: x}]\n"),
         [f"deployment.yaml:10: {MD}: spec.tolerations[0].key: an Equal toleration must set a key (use operator: "
          "Exists with no key to tolerate every taint)"]),
    Rule("CEL that fails to compile is a validation error with its column",
         edit(D, '.compareTo(quantity("40Gi")) >= 0', '.compareTo(quantity("40Gi")) >='),
         [f"deployment.yaml:20: {MD}: spec.engines[0].members[0].nodeSelector.devices[0].selectors[0].cel: invalid "
          "CEL selector (column 70): Syntax error: unexpected end of expression"]),
    Rule("comparing quantities with an operator is an error, with a hint to use compareTo",
         edit(D, '.compareTo(quantity("40Gi")) >= 0', ' >= quantity("40Gi")'),
         [f"deployment.yaml:20: {MD}: spec.engines[0].members[0].nodeSelector.devices[0].selectors[0].cel: invalid "
          "CEL selector (column 42): found no matching overload for '_>=_' applied to '(kubernetes.Quantity, "
          "kubernetes.Quantity)' (use compareTo: device.capacity[\"gpu.nvidia.com\"].memory.compareTo("
          "quantity(\"40Gi\")) >= 0, or isGreaterThan/isLessThan)"]),
    Rule("at most 32 selectors per request (Kubernetes' DRA limit)",
         edit(D, '          - cel: device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0\n',
              '          - cel: device.driver == "gpu.nvidia.com"\n' * 33),
         [f"deployment.yaml:19: {MD}: spec.engines[0].members[0].nodeSelector.devices[0].selectors: allows at most "
          "32 item(s); got 33"]),
    Rule("a ModelService selector names at least one label",
         edit("service.yaml", "{matchLabels: {modelplane.ai/deployment: m}}", "{matchLabels: {}}"),
         ["service.yaml:8: ModelService ml/s: spec.endpoints[0].selector.matchLabels: matchLabels must name at least "
          "one label (e.g. modelplane.ai/deployment: <deployment>)"]),
    Rule("a ModelService weight is positive",
         edit("service.yaml", "weight: 1", "weight: 0"),
         ["service.yaml:9: ModelService ml/s: spec.endpoints[0].weight: must be at least 1; got int 0"]),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_rule(rule: Rule) -> None:
    assert report(rule.files) == rule.want


def test_a_crossplane_style_deployment_loads_to_the_same_model_with_a_warning() -> None:
    """Upstream Modelplane nests everything but replicas under spec.template.spec (issue 2)."""
    nested = DEPLOYMENT.replace("  modelCacheRef:", "  template:\n    metadata: {labels: {tier: prod}}\n    spec:\n"
                                "      modelCacheRef:")
    lines = nested.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "modelCacheRef" in line) + 1
    nested = "".join(lines[:start]) + "".join("    " + line for line in lines[start:])
    flat = load_sources(sorted(FILES.items()))
    loaded = load_sources(sorted({**FILES, D: nested}.items()))
    deployment = loaded.workloads.deployments[0]
    assert deployment.spec == flat.workloads.deployments[0].spec
    assert deployment.metadata.labels == {"tier": "prod"}
    assert [(w.code, w.severity, w.path) for w in loaded.warnings] == [("nested-form", Severity.WARNING, "spec.template")]
    assert "write the flat form" in loaded.warnings[0].message


def test_problems_in_the_nested_form_point_at_what_the_user_wrote() -> None:
    nested = ("apiVersion: modelplane.ai/v1alpha1\nkind: ModelDeployment\nmetadata: {name: m, namespace: ml}\n"
              "spec:\n  replicas: 1\n  template:\n    spec:\n      engines:\n      - name: e\n        copies: -1\n"
              "        members: []\n")
    assert report({"n.yaml": nested})[1:] == [
        "n.yaml:10: ModelDeployment ml/m: spec.template.spec.engines[0].copies: must be at least 1; got int -1",
        "n.yaml:11: ModelDeployment ml/m: spec.template.spec.engines[0].members: needs at least 1 item(s); got 0",
    ]


def test_every_problem_is_reported_not_just_the_first() -> None:
    files = edit(D, "copies: 1", "copies: 0", extra={"cluster.yaml": CLUSTER.replace("className: h100", "className: x")})
    assert len(report(files)) == 2
