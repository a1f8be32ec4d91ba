"""What the Crossplane-based Modelplane (v0.3.1) writes that we used to refuse (issue 16), rule by rule.

Each case is a small manifest set and the exact problems the loader reports for it: the
InferenceGateway in upstream's form (backend, traefik, metallb, status; no spec.cluster), documents
of other API groups beside ours (skipped with a warning, an error when strict), and the label keys
under `modelplane.ai/` that stay the user's. Field names and values come from upstream's published
InferenceGateway definition and examples (the chart version 40.2.0, the kind address pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from modelplane.api import CONTROL_CLUSTER as CONTROL_CLUSTER_HOST
from modelplane.api import GatewayBackend, ManifestErrors, Manifests, load_sources
from modelplane.api.labels import RESERVED
from modelplane.cli import main
from modelplane.compose import names

CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata:
  name: starter
  labels: {modelplane.ai/region: us-central}
spec:
  cluster:
    source: Existing
    existing: {kubeconfig: starterKubeconfig}
  nodePools:
  - {name: gpu, className: l4, nodeCount: 1}
  gateway: {publicInference: true}   # upstream's clusters take every caller: here they must say so
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: l4
spec:
  devices:
  - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, capacity: {memory: {value: 23034Mi}}}
"""

UPSTREAM_GATEWAY = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceGateway
metadata:
  name: default
spec:
  backend: Traefik
  traefik:
    version: "40.2.0"
    loadBalancer: MetalLB
    metallb:
      addressPool: "172.18.255.200-172.18.255.250"
  plainHTTP: true
"""


def gateway(spec: str, name: str = "default", status: str = "") -> str:
    """A gateway with `spec`, plus `plainHTTP: true`: upstream's plain-HTTP gateway must say so here."""
    return (f"apiVersion: modelplane.ai/v1alpha1\nkind: InferenceGateway\nmetadata:\n  name: {name}\n"
            f"spec:\n{spec}  plainHTTP: true\n{status}")


def report(files: dict[str, str], strict: bool = False, control_cluster: bool = False) -> list[str]:
    """Every problem (errors, then warnings) the loader reports, as the user sees them."""
    try:
        manifests = load_sources(sorted(files.items()), strict=strict, control_cluster=control_cluster)
    except ManifestErrors as errors:
        return [*(str(p) for p in errors.errors), *(str(p) for p in errors.warnings)]
    return [str(p) for p in manifests.warnings]


def loaded(files: dict[str, str], control_cluster: bool = False) -> Manifests:
    return load_sources(sorted({"cluster.yaml": CLUSTER, **files}.items()), control_cluster=control_cluster)


@dataclass
class Case:
    name: str
    files: dict[str, str]
    want: list[str] = field(default_factory=list)
    control_cluster: bool = False
    """Load as control-cluster mode does (the fleet has a control cluster)."""


CONTROL_CLUSTER = ("spec.cluster: spec.cluster is required without a control cluster: a gateway without it runs on "
                   "the control cluster; set it to the InferenceCluster that hosts the fleet gateway (defined: "
                   "starter), or run in control-cluster mode (stack config modelplane:source: cluster)")
NOT_DEFAULT = ("gateway.yaml:4: warning: InferenceGateway front: metadata.name: the Crossplane-based Modelplane accepts "
               "one InferenceGateway, named 'default' (its ModelServices look the gateway up by that name); name it "
               "default to keep these manifests portable")
CASES = [
    Case("upstream's gateway with the cluster that hosts it loads",
         {"gateway.yaml": UPSTREAM_GATEWAY.replace("spec:\n", "spec:\n  cluster: starter\n")}),
    Case("upstream's gateway as published names no cluster: without a control cluster, an error at spec.cluster",
         {"gateway.yaml": UPSTREAM_GATEWAY},
         [f"gateway.yaml:5: InferenceGateway default: {CONTROL_CLUSTER}"]),
    Case("a control-plane gateway not named default also gets upstream's naming rule as a warning",
         {"gateway.yaml": UPSTREAM_GATEWAY.replace("name: default", "name: front")},
         [f"gateway.yaml:5: InferenceGateway front: {CONTROL_CLUSTER}", NOT_DEFAULT]),
    Case("with a control cluster, upstream's gateway as published loads: it runs there",
         {"gateway.yaml": UPSTREAM_GATEWAY}, control_cluster=True),
    Case("with a control cluster, a clusterless gateway not named default keeps upstream's naming warning",
         {"gateway.yaml": UPSTREAM_GATEWAY.replace("name: default", "name: front")}, [NOT_DEFAULT],
         control_cluster=True),
    Case("with a control cluster, a gateway that names a cluster still needs it defined",
         {"gateway.yaml": gateway("  cluster: elsewhere\n")},
         ["gateway.yaml:6: InferenceGateway default: spec.cluster: InferenceCluster 'elsewhere' is not defined "
          "(defined: starter)"], control_cluster=True),
    Case("a gateway on a named cluster may have any name",
         {"gateway.yaml": gateway("  cluster: starter\n", name="front")}),
    Case("status.address, what the control plane writes back, is accepted",
         {"gateway.yaml": gateway("  cluster: starter\n", status="status:\n  address: 172.18.255.200\n")}),
    Case("a second gateway is an error",
         {"gateway.yaml": gateway("  cluster: starter\n"), "second.yaml": gateway("  cluster: starter\n", "second")},
         ["second.yaml:4: InferenceGateway second: metadata.name: a fleet has one InferenceGateway; 'default' is "
          "already defined at gateway.yaml:1"]),
    Case("traefik settings need backend Traefik",
         {"gateway.yaml": gateway("  cluster: starter\n  traefik: {version: 40.2.0}\n")},
         ["gateway.yaml:7: InferenceGateway default: spec.traefik: traefik is only allowed when backend is "
          "Traefik, not EnvoyGateway"]),
    Case("loadBalancer MetalLB needs an address pool",
         {"gateway.yaml": gateway("  cluster: starter\n  backend: Traefik\n  traefik: {loadBalancer: MetalLB}\n")},
         ["gateway.yaml:8: InferenceGateway default: spec.traefik.metallb: metallb.addressPool is required when "
          "loadBalancer is MetalLB"]),
    Case("an address pool without loadBalancer MetalLB is refused",
         {"gateway.yaml": gateway("  cluster: starter\n  backend: Traefik\n  traefik:\n"
                                  "    metallb: {addressPool: 10.0.0.0/28}\n")},
         ["gateway.yaml:9: InferenceGateway default: spec.traefik.metallb: metallb is only allowed when "
          "loadBalancer is MetalLB"]),
    Case("an address pool is a CIDR or a low-to-high range",
         {"gateway.yaml": UPSTREAM_GATEWAY.replace("spec:\n", "spec:\n  cluster: starter\n")
          .replace("172.18.255.200-172.18.255.250", "172.18.255.250-172.18.255.200")},
         ["gateway.yaml:12: InferenceGateway default: spec.traefik.metallb.addressPool: "
          "'172.18.255.250-172.18.255.200' is not an address pool: write a CIDR (10.0.0.0/28) or a range of one IP "
          "family, low to high (172.18.255.200-172.18.255.250)"]),
    Case("the chart version is a semantic version",
         {"gateway.yaml": gateway("  cluster: starter\n  backend: Traefik\n  traefik: {version: latest}\n")},
         ["gateway.yaml:8: InferenceGateway default: spec.traefik.version: 'latest' is not a semantic version "
          "(No Major.Minor.Patch elements found); write e.g. 9.0.0 or 1.2.3-rc.1"]),
    Case("the backend is one of the two",
         {"gateway.yaml": gateway("  cluster: starter\n  backend: Envoy\n")},
         ["gateway.yaml:7: InferenceGateway default: spec.backend: must be one of 'EnvoyGateway' or 'Traefik'; "
          "got 'Envoy'"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gateway_forms(case: Case) -> None:
    assert report({"cluster.yaml": CLUSTER, **case.files}, control_cluster=case.control_cluster) == case.want


@pytest.mark.parametrize(("spec", "control_cluster", "host"), [
    ("  cluster: starter\n", False, "starter"),
    ("  cluster: starter\n", True, "starter"),
    ("  backend: EnvoyGateway\n", True, CONTROL_CLUSTER_HOST),
], ids=["a named cluster", "a named cluster beside a control cluster", "no spec.cluster: the control cluster"])
def test_the_gateway_runs_on_its_host(spec: str, control_cluster: bool, host: str) -> None:
    gateway_manifest = loaded({"gateway.yaml": gateway(spec)}, control_cluster=control_cluster).fleet.gateway
    assert gateway_manifest is not None and gateway_manifest.host == host


def test_upstream_gateway_fields_read_as_written() -> None:
    spec = loaded({"gateway.yaml": UPSTREAM_GATEWAY.replace("spec:\n", "spec:\n  cluster: starter\n")}).fleet.gateway
    assert spec is not None
    assert (spec.spec.backend, spec.traefik.version, spec.traefik.load_balancer, spec.traefik.metallb) == (
        GatewayBackend.TRAEFIK, "40.2.0", "MetalLB", spec.spec.traefik.metallb)
    assert spec.traefik.metallb is not None and spec.traefik.metallb.address_pool == "172.18.255.200-172.18.255.250"


def test_without_a_backend_a_gateway_keeps_envoy_gateway() -> None:
    manifests = loaded({"gateway.yaml": gateway("  cluster: starter\n")})
    assert manifests.fleet.gateway is not None and manifests.fleet.gateway.spec.backend is GatewayBackend.ENVOY_GATEWAY


def test_status_is_never_an_input_of_the_placement() -> None:
    from modelplane.api import dump_objects

    manifests = loaded({"gateway.yaml": gateway("  cluster: starter\n", status="status:\n  address: 10.0.0.1\n")})
    [dumped] = [obj for obj in dump_objects(manifests) if obj["kind"] == "InferenceGateway"]
    assert "status" not in dumped


PODMONITOR = """\
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: engine-metrics
  namespace: ml-team
spec:
  selector:
    matchExpressions: [{key: modelplane.ai/serving, operator: Exists}]
  podMetricsEndpoints: [{targetPort: 8000, path: /metrics}]
"""
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml-team\n"
FOREIGN = {"cluster.yaml": CLUSTER, "monitor.yaml": PODMONITOR, "zz-namespace.yaml": "---\n" + NAMESPACE}
HINT = "apply it with kubectl or declare it in your Pulumi program"


def test_other_api_groups_are_skipped_with_one_warning_each() -> None:
    assert report(FOREIGN) == [
        f"monitor.yaml:1: warning: PodMonitor ml-team/engine-metrics: not a modelplane.ai kind "
        f"(monitoring.coreos.com/v1): {HINT}",
        f"zz-namespace.yaml:2: warning: Namespace ml-team: not a modelplane.ai kind (v1): {HINT}"]
    assert load_sources(sorted(FOREIGN.items())).counts() == {"InferenceClass": 1, "InferenceCluster": 1}


def test_strict_makes_other_api_groups_errors() -> None:
    assert report(FOREIGN, strict=True) == [
        f"monitor.yaml:1: PodMonitor ml-team/engine-metrics: not a modelplane.ai kind (monitoring.coreos.com/v1): "
        f"{HINT}",
        f"zz-namespace.yaml:2: Namespace ml-team: not a modelplane.ai kind (v1): {HINT}"]


@pytest.mark.parametrize("api_version, want", [
    ("infrastructure.modelplane.ai/v1alpha1", "not a modelplane.ai kind (infrastructure.modelplane.ai/v1alpha1)"),
    ("modelplane.ai/v1", "apiVersion: unknown apiVersion 'modelplane.ai/v1'; Modelplane reads modelplane.ai/v1alpha1"),
], ids=["another group under the same domain is another group", "an unknown version of ours stays an error"])
def test_what_counts_as_another_api_group(api_version: str, want: str) -> None:
    problems = report({"cluster.yaml": CLUSTER, "x.yaml": NAMESPACE.replace("v1", api_version, 1)})
    assert len(problems) == 1 and want in problems[0]


def test_an_internal_kind_of_ours_stays_an_error() -> None:
    """ModelReplica is modelplane.ai/v1alpha1, composed by upstream's controller: still not a kind we read."""
    replica = "apiVersion: modelplane.ai/v1alpha1\nkind: ModelReplica\nmetadata: {name: r, namespace: ml-team}\n"
    [problem] = report({"cluster.yaml": CLUSTER, "replica.yaml": replica})
    assert problem.startswith("replica.yaml:2: ModelReplica ml-team/r: kind: unknown kind 'ModelReplica'")


@pytest.mark.parametrize("flag, code", [([], 0), (["--strict"], 1)])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_the_cli_skips_other_kinds_unless_strict(command: str, flag: list[str], code: int, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for file, text in FOREIGN.items():
        (tmp_path / file).write_text(text)
    assert main([command, str(tmp_path), *flag]) == code
    err = capsys.readouterr().err
    assert err.count("not a modelplane.ai kind") == 2 and "Traceback" not in err


@pytest.mark.parametrize("flag, code", [([], 1), (["--control-cluster"], 0)])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_the_cli_takes_upstreams_gateway_only_when_told_of_a_control_cluster(
        command: str, flag: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "gateway.yaml").write_text(UPSTREAM_GATEWAY)
    assert main([command, str(tmp_path), *flag]) == code
    err = capsys.readouterr().err
    assert (CONTROL_CLUSTER in err) is (code == 1) and "Traceback" not in err


ENDPOINT = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata:
  name: kimi-k2-together
  namespace: ml-team
  labels:
    modelplane.ai/external-provider: together
spec:
  url: https://api.together.xyz/
  rewritePath: /
"""


def test_a_modelplane_ai_label_we_do_not_set_is_the_users_and_is_kept() -> None:
    [endpoint] = loaded({"endpoint.yaml": ENDPOINT}).workloads.endpoints
    assert endpoint.metadata.labels == {"modelplane.ai/external-provider": "together"}


@pytest.mark.parametrize("key", sorted(RESERVED))
def test_every_label_modelplane_sets_is_reserved(key: str) -> None:
    [problem] = report({"cluster.yaml": CLUSTER, "endpoint.yaml": ENDPOINT.replace(
        "modelplane.ai/external-provider", key)})
    assert f"label key {key!r} is one Modelplane sets itself" in problem


def test_the_reserved_keys_are_the_ones_compose_sets() -> None:
    """compose labels objects with exactly these keys (and the node pool label): none is left out."""
    composed = {value for value in vars(names).values() if isinstance(value, str) and value.startswith("modelplane.ai/")}
    assert composed == RESERVED - {"modelplane.ai/gpu"}
