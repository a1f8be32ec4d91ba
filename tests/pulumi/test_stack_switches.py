"""The stack-config switches platform teams use on brownfield clusters, under mocks: `servingStack`
(skip the charts and CRDs a cluster already runs) and `skipAwait` (do not block `up` on readiness).
The end-to-end suite (tests/e2e) runs the same switches with the real engine."""

from __future__ import annotations

import pytest

from tests.pulumi.harness import Engine, Run, dev_config, run_program

RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
GATEWAY_CLASS = "kubernetes:gateway.networking.k8s.io/v1:GatewayClass"
SKIP = ("pulumi.com/skipAwait", "true")
CLUSTERS = ("eks-us-west", "gke-us-central", "onprem-us-east")


def clusters_with(run: Run, typ: str) -> set[str]:
    """The clusters a serving-stack resource of this type is registered on (by its provider)."""
    return {cluster for r in run.engine.of_type(typ) if "index:ServingStack$" in run.urn(r.name)
            for cluster in CLUSTERS if r.provider_name.startswith(f"modelplane:{cluster}-")}


def annotations(inputs: dict) -> dict:
    return inputs.get("metadata", {}).get("annotations", {})


def test_serving_stack_off_installs_no_chart_but_keeps_our_gateway() -> None:
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:servingStack": False}))
    assert not run.engine.of_type(RELEASE)
    assert not clusters_with(run, CONFIG_FILE)
    assert clusters_with(run, GATEWAY_CLASS) == {"eks-us-west", "gke-us-central", "onprem-us-east"}
    assert {r.inputs["metadata"]["name"] for r in run.engine.of_type(GATEWAY)} == {"inference", "fleet"}


def test_serving_stack_can_be_skipped_for_one_cluster() -> None:
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:servingStack": {"onprem-us-east": False}}))
    assert clusters_with(run, RELEASE) == {"eks-us-west", "gke-us-central"}
    assert clusters_with(run, CONFIG_FILE) == {"eks-us-west", "gke-us-central"}
    assert "onprem-us-east" in clusters_with(run, GATEWAY)


@pytest.mark.parametrize(("value", "message"), [
    ({"onprem-west": False}, "names clusters the manifests do not declare: onprem-west (clusters: eks-us-west, "
                             "gke-us-central, onprem-us-east; _control: the control cluster)"),
    ("maybe", "must be true, false or a map of cluster name -> true/false"),
    ({"onprem-us-east": "no"}, "must be true, false or a map of cluster name -> true/false"),
])
def test_a_wrong_serving_stack_value_says_what_is_allowed(value: object, message: str) -> None:
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_program(Engine(preview=True), dev_config(**{"modelplane:servingStack": value}))


def test_skip_await_marks_every_workload_and_chart_but_not_gateways() -> None:
    run = run_program(Engine(), dev_config(**{"modelplane:skipAwait": True}))
    kinds = {"kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
             "kubernetes:core/v1:Service", "kubernetes:batch/v1:Job"}
    marked = [r for r in run.engine.registered if r.typ in kinds]
    assert {r.typ for r in marked} == kinds
    assert all(SKIP in annotations(r.inputs).items() for r in marked)
    assert all(r.inputs["skipAwait"] is True for r in run.engine.of_type(RELEASE))
    gateways = run.engine.of_type(GATEWAY)
    assert gateways and all("pulumi.com/skipAwait" not in annotations(r.inputs) for r in gateways)
    assert all("pulumi.com/waitFor" in annotations(r.inputs) for r in gateways)


def test_without_skip_await_nothing_is_marked() -> None:
    run = run_program(Engine())
    assert not any("pulumi.com/skipAwait" in annotations(r.inputs) for r in run.engine.registered
                   if isinstance(r.inputs.get("metadata"), dict))
    assert not any(r.inputs.get("skipAwait") for r in run.engine.of_type(RELEASE))


def test_given_gateway_addresses_are_used_without_waiting_for_a_controller() -> None:
    given = {"onprem-us-east": "gw.onprem.example", "_fleet": "fleet.example"}
    run = run_program(Engine(), dev_config(**{"modelplane:gatewayAddresses": given}))
    waits = {r.name: ("pulumi.com/waitFor" in annotations(r.inputs), SKIP in annotations(r.inputs).items())
             for r in run.engine.of_type(GATEWAY)}
    assert waits == {"modelplane:gke-us-central:serving:Gateway:modelplane-system/inference": (True, False),
                     "modelplane:eks-us-west:serving:Gateway:modelplane-system/inference": (True, False),
                     "modelplane:onprem-us-east:serving:Gateway:modelplane-system/inference": (False, True),
                     "modelplane-gateway:gke-us-central:Gateway:modelplane-system/fleet": (False, True)}
    assert run.outputs["gatewayAddresses"] == {"gke-us-central": "34.120.0.1",
                                               "eks-us-west": "a1.elb.us-west-2.amazonaws.com",
                                               "onprem-us-east": "gw.onprem.example"}
    assert run.outputs["gatewayAddress"] == "fleet.example"
    assert all(url.startswith("https://models.example.com/") for url in run.outputs["serviceUrls"].values()), \
        "the dev stack's secured gateway publishes its hostname, not the given address"


def test_a_gateway_address_for_an_undeclared_cluster_is_an_error() -> None:
    with pytest.raises(Exception, match="gatewayAddresses names clusters the manifests do not declare: west"):
        run_program(Engine(preview=True), dev_config(**{"modelplane:gatewayAddresses": {"west": "w.example"}}))
