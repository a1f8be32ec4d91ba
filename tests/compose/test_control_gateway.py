"""The fleet gateway on the control cluster (an InferenceGateway without `spec.cluster`, control-cluster mode).

compose renders the gateway's objects for the `CONTROL_CLUSTER` host exactly as for a workload
cluster that hosts it, and gives that host a stack of the backend's add-ons only
(`gateways.control_stack`): no GPU add-on, no inference Gateway, Envoy Gateway only for the
EnvoyGateway backend (whose workload-cluster add-ons are the serving stack's own), and never a
Namespace: the control cluster's are the teams' (the ModelServices live there) and the control plane's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from modelplane.api import CONTROL_CLUSTER, Fleet
from modelplane.compose import Rendered
from tests.compose.schemas import problems
from tests.compose.test_gateway_backends import CRDS, ENVOY, METALLB, TRAEFIK, mixed


def on_control(fleet: Fleet) -> Fleet:
    """The same fleet with its gateway's `spec.cluster` removed: it runs on the control cluster."""
    gateway = fleet.gateway
    assert gateway is not None
    clusterless = gateway.model_copy(update={"spec": gateway.spec.model_copy(update={"cluster": None})})
    return Fleet(clusters=fleet.clusters, classes=fleet.classes, gateway=clusterless)


def without_namespaces(manifests: tuple[dict, ...]) -> list[dict]:
    return [m for m in manifests if m["kind"] != "Namespace"]


def stack(rendered: Rendered, host: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(addon.name, str(addon.install), addon.depends_on) for addon in rendered.addons[host]]


BACKENDS = [TRAEFIK, METALLB, ENVOY]
IDS = ["Traefik", "Traefik with MetalLB", "Envoy Gateway"]
CLASS = "fleet-gateway-class"


@pytest.mark.parametrize("hosted", BACKENDS, ids=IDS)
def test_the_control_cluster_gets_the_objects_a_workload_cluster_hosting_the_gateway_gets(hosted: Fleet) -> None:
    on_workload, on_control_cluster = mixed(hosted), mixed(on_control(hosted))
    assert list(on_control_cluster.gateway) == without_namespaces(on_workload.gateway), (
        "the same objects, without the services' namespace, which the control cluster holds as the teams'")
    assert "Namespace" not in {m["kind"] for m in on_control_cluster.gateway}
    assert on_control_cluster.clusters == on_workload.clusters, "the workload clusters' objects do not change"
    assert on_control_cluster.endpoints == on_workload.endpoints


@pytest.mark.parametrize("hosted", BACKENDS, ids=IDS)
def test_no_workload_cluster_gets_the_backend_addons_when_the_gateway_runs_on_the_control_cluster(hosted: Fleet) -> None:
    rendered = mixed(on_control(hosted))
    assert sorted(rendered.addons) == sorted([CONTROL_CLUSTER, "gpu-a", "gpu-b"])
    assert stack(rendered, "gpu-a") == stack(rendered, "gpu-b") == stack(mixed(ENVOY), "gpu-b"), (
        "each workload cluster keeps the plain serving stack")


@dataclass
class Case:
    name: str
    fleet: Fleet
    stack: list[tuple[str, str, tuple[str, ...]]]


CASES = [
    Case("Envoy Gateway: Envoy Gateway itself, then modelplane's GatewayClass", ENVOY,
         [("envoy-gateway", "helm", ()), (CLASS, "objects", ("envoy-gateway",))]),
    Case("Traefik: the Gateway API CRDs, Traefik and its GatewayClass", TRAEFIK,
         [*((crd, "manifest", ()) for crd in CRDS), ("traefik", "helm", CRDS),
          ("traefik-gateway-class", "objects", ("traefik",))]),
    Case("Traefik with MetalLB: MetalLB and its pool before Traefik", METALLB,
         [*((crd, "manifest", ()) for crd in CRDS), ("metallb", "helm", ()),
          ("metallb-address-pool", "objects", ("metallb",)), ("traefik", "helm", (*CRDS, "metallb-address-pool")),
          ("traefik-gateway-class", "objects", ("traefik",))]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_control_cluster_stack_holds_the_backend_addons_only(case: Case) -> None:
    rendered = mixed(on_control(case.fleet))
    assert stack(rendered, CONTROL_CLUSTER) == case.stack
    hosting = mixed(case.fleet).addons["gpu-a"]
    backend = [addon for addon in rendered.addons[CONTROL_CLUSTER] if addon.name not in ("envoy-gateway", CLASS)]
    assert backend == [addon for addon in hosting if addon.name in {a.name for a in backend}], (
        "the backend's add-ons are those a workload cluster hosting the gateway gets")
    objects = [obj for addon in rendered.addons[CONTROL_CLUSTER] for obj in addon.objects]
    assert "Namespace" not in {m["kind"] for m in objects}
    assert {f"{m['kind']}/{m['metadata']['name']}": found for m in objects if (found := problems(m))} == {}


def test_envoy_gateway_on_the_control_cluster_has_no_ai_gateway_extension() -> None:
    """No InferencePool is routed on the control cluster, and no AI Gateway controller runs there to
    answer the extension hooks; the rest of Envoy Gateway's configuration is the workload clusters'."""
    control = next(a for a in mixed(on_control(ENVOY)).addons[CONTROL_CLUSTER] if a.name == "envoy-gateway")
    workload = next(a for a in mixed(ENVOY).addons["gpu-a"] if a.name == "envoy-gateway")
    config = dict(workload.values["config"]["envoyGateway"])
    assert "extensionManager" in config
    del config["extensionManager"]
    assert control.values == {"config": {"envoyGateway": config}}
    assert (control.chart_ref, control.version, control.namespace) == (
        workload.chart_ref, workload.version, workload.namespace)


def test_render_files_show_the_control_cluster_stack_beside_the_gateway_objects() -> None:
    files = mixed(on_control(TRAEFIK)).files()
    assert f"_inventory/stacks/{CONTROL_CLUSTER}.yaml" in files
    assert "_gateway/modelplane-system/gateway-fleet.yaml" in files
    assert not any(path.startswith(f"{CONTROL_CLUSTER}/") for path in files), "the objects stay under _gateway"
