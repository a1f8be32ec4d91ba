"""The fleet gateway on the control cluster, under Pulumi's mocks: the real program (`__main__.py`) in
control-cluster mode with the recorded objects (tests/data/control-cluster) and their InferenceGateway
in upstream's form, without `spec.cluster`.

The control cluster gets a kubernetes Provider from the control kubeconfig (secret), a serving stack
of the gateway backend's add-ons only, the fleet Gateway and the ModelService routes; the fleet
gateway's address is the `gatewayAddress` output and the InferenceGateway's written `status.address`.
Addresses come from the mock engine (tests/pulumi/harness.py `GATEWAY_ADDRESSES`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from modelplane.pulumi import control_cluster, status
from tests.api.test_served import recorded_items
from tests.pulumi.harness import ROOT, Engine, Run, dev_config, is_secret, run_program, unwrap
from tests.pulumi.recorded_api import RecordedCluster
from tests.pulumi.test_control_cluster import CONTROL_KUBECONFIG, SECRET, cluster_config

CONTROL = "modelplane:_control:k8s"
ADDRESS = "198.51.100.80"
RELEASE = "kubernetes:helm.sh/v3:Release"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
TRAEFIK = {"backend": "Traefik", "traefik": {"version": "40.2.0", "loadBalancer": "MetalLB",
                                             "metallb": {"addressPool": "10.0.255.200-10.0.255.250"}}}


def recorded(spec: dict[str, Any]) -> RecordedCluster:
    """The recorded objects with the InferenceGateway's spec replaced by `spec`."""
    items = copy.deepcopy(recorded_items())
    [gateway] = [item for item in items if item["kind"] == "InferenceGateway"]
    gateway["spec"] = {**spec, "plainHTTP": True}
    return RecordedCluster(items, [SECRET])


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RecordedCluster]]:
    """Serve `recorded(...)` clusters: the test appends the one the program connects to."""
    served: list[RecordedCluster] = []

    def connect_recorded(kubeconfig: str | None) -> Any:
        assert kubeconfig in (CONTROL_KUBECONFIG, None)
        return served[-1].client()

    monkeypatch.setattr(control_cluster, "connect", connect_recorded)
    monkeypatch.setattr(status, "connect", connect_recorded)
    yield served


def on(run: Run, provider: str, typ: str | None = None) -> list[Any]:
    return [r for r in run.engine.registered if r.provider_name == provider and (typ is None or r.typ == typ)]


@pytest.mark.parametrize(("spec", "charts", "gateway_class"), [
    (TRAEFIK, {"metallb", "traefik"}, "traefik"),
    ({"backend": "EnvoyGateway"}, {"envoy-gateway"}, "modelplane"),
], ids=["Traefik with MetalLB", "Envoy Gateway"])
def test_a_clusterless_gateway_runs_on_the_control_cluster(connect: list[RecordedCluster], spec: dict[str, Any],
                                                           charts: set[str], gateway_class: str) -> None:
    connect.append(cluster := recorded(spec))
    run = run_program(Engine(), cluster_config())
    [provider] = [r for r in run.engine.of_type("pulumi:providers:kubernetes") if r.name == CONTROL]
    assert is_secret(provider.inputs["kubeconfig"]) and unwrap(provider.inputs["kubeconfig"]) == CONTROL_KUBECONFIG
    assert {r.inputs["name"] for r in on(run, CONTROL, RELEASE)} == charts, "the backend's charts, none for GPUs"
    [fleet_gateway] = [unwrap(r.inputs) for r in on(run, CONTROL, GATEWAY)]
    assert (fleet_gateway["metadata"]["name"], fleet_gateway["spec"]["gatewayClassName"]) == ("fleet", gateway_class)
    assert "modelplane:index:InferenceGateway$" in run.urn("modelplane-gateway:_control:Gateway:modelplane-system/fleet")
    routes = [unwrap(r.inputs)["metadata"]["name"]
              for r in on(run, CONTROL, "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")]
    assert routes == ["qwen3"], "the ModelService route is registered on the control cluster"
    for workload in ("modelplane:gke-us-central-gke-k8s", "modelplane:onprem-us-east-existing-k8s"):
        assert [unwrap(r.inputs)["metadata"]["name"] for r in on(run, workload, GATEWAY)] == ["inference"]
        assert not {r.inputs["name"] for r in on(run, workload, RELEASE)} & {"traefik", "metallb"}
    assert run.outputs["gatewayAddress"] == ADDRESS
    assert run.outputs["serviceUrls"] == {"ml-team/qwen3": f"http://{ADDRESS}/ml-team/qwen3/"}
    assert "_control" not in run.outputs["gatewayAddresses"], "no workload cluster's gateway"
    assert cluster.find("InferenceGateway", "", "default")["status"] == {"address": ADDRESS}
    assert cluster.find("ModelService", "ml-team", "qwen3")["status"]["url"] == f"http://{ADDRESS}/ml-team/qwen3/"


def test_the_routes_on_the_control_cluster_reach_the_workload_clusters_gateways(connect: list[RecordedCluster]) -> None:
    connect.append(recorded(TRAEFIK))
    run = run_program(Engine(), cluster_config())
    slices = {s["metadata"]["name"]: s["endpoints"][0]["addresses"]
              for s in (unwrap(r.inputs) for r in on(run, CONTROL, "kubernetes:discovery.k8s.io/v1:EndpointSlice"))}
    assert slices == {"qwen3-gateway-gke-us-central": ["34.120.0.1"], "qwen3-gateway-onprem-us-east": ["10.40.0.5"]}


def test_in_cluster_the_control_provider_uses_the_pods_own_configuration(connect: list[RecordedCluster]) -> None:
    connect.append(recorded(TRAEFIK))
    run = run_program(Engine(preview=True), cluster_config(**{"modelplane:controlKubeconfig": None}))
    [provider] = [r for r in run.engine.of_type("pulumi:providers:kubernetes") if r.name == CONTROL]
    assert "kubeconfig" not in provider.inputs


@pytest.mark.parametrize(("serving_stack", "charts"), [
    (False, set()), ({"_control": False}, set()), ({"gke-us-central": False}, {"metallb", "traefik"})],
    ids=["off everywhere", "off on the control cluster", "off on a workload cluster only"])
def test_serving_stack_switch_covers_the_control_cluster(connect: list[RecordedCluster], serving_stack: Any,
                                                         charts: set[str]) -> None:
    connect.append(recorded(TRAEFIK))
    run = run_program(Engine(preview=True), cluster_config(**{"modelplane:servingStack": serving_stack}))
    assert {r.inputs["name"] for r in on(run, CONTROL, RELEASE)} == charts
    classes = [unwrap(r.inputs)["metadata"]["name"]
               for r in on(run, CONTROL, "kubernetes:gateway.networking.k8s.io/v1:GatewayClass")]
    assert classes == ["traefik"], "modelplane's own objects are created either way"


def test_from_files_a_clusterless_gateway_is_an_error_naming_spec_cluster(tmp_path: Any) -> None:
    for file in (ROOT / "examples" / "multi-cloud").glob("*.yaml"):
        text = file.read_text().replace("spec:\n  cluster: gke-us-central\n", "spec:\n  port: 80\n")
        (tmp_path / file.name).write_text(text)
    with pytest.raises(pulumi.RunError, match=r"fleet.yaml:185: InferenceGateway fleet: spec.cluster: spec.cluster is required "
                                              r"without a control cluster: .* or run in control-cluster mode"):
        run_program(Engine(preview=True), dev_config(**{"modelplane:manifests": [str(tmp_path)]}))


def test_the_library_refuses_a_clusterless_gateway_without_the_control_cluster(tmp_path: Any) -> None:
    """Manifests loaded with `control_cluster=True` but handed to `Modelplane` without one."""
    from modelplane.api import load
    from modelplane.pulumi import Modelplane
    from tests.pulumi.test_components import run

    for file in (ROOT / "examples" / "multi-cloud").glob("*.yaml"):
        (tmp_path / file.name).write_text(file.read_text().replace("spec:\n  cluster: gke-us-central\n", "spec:\n"))
    manifests = load([tmp_path], control_cluster=True)

    def program() -> dict[str, Any]:
        Modelplane("ml", {"manifests": manifests, "gcp_project": "acme-ml",
                          "kubeconfigs": {"onprem-us-east": pulumi.Output.secret("kubeconfig: onprem")}})
        return {}

    with pytest.raises(pulumi.RunError, match="InferenceGateway fleet: without spec.cluster the gateway runs on the "
                                              "control cluster, and these manifests were not read from one"):
        run(program, Engine(preview=True))
