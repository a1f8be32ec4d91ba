"""Observed capacity in the Pulumi layer: reading Nodes and ResourceSlices (`pulumi/observe.py`), and
the placement provider planning against them with the outage clock kept in its state.

Fake objects follow the Kubernetes API shapes (core/v1 Node conditions, resource.k8s.io/v1
ResourceSlice `spec.nodeName`, `spec.driver`, `spec.devices`). The provider is driven as the engine
drives it (check with the previous state's outputs as olds), with its clock set by monkeypatching
`time.time` in the provider's module: the core never reads a clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelplane.api import Fleet, Manifests, Workloads, dump_objects
from modelplane.pulumi import placement as provider_module
from modelplane.pulumi.observe import usable_nodes
from modelplane.pulumi.placement import PlacementProvider, objects_text
from modelplane.scheduling.observed import ClusterObservation, PoolObservation, observations_to_json
from tests.builders import cluster, deployment, exclusive_pool, gpu, klass, request, standalone

H100 = klass("h100", gpu(count=8))
FLEET = Fleet(clusters=(cluster("a", exclusive_pool("gpu", nodes=2)), cluster("b", exclusive_pool("gpu", nodes=2))),
              classes=(H100,))
T0 = 1_800_000_000


def node(name: str, pool: str | None = "gpu", ready: bool = True) -> dict[str, Any]:
    labels = {"modelplane.ai/pool": pool} if pool else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def resource_slice(node_name: str, devices: int, driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "spec": {"nodeName": node_name, "driver": driver, "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}


@pytest.mark.parametrize(("nodes", "slices", "want"), [
    ([node("n1"), node("n2")], [resource_slice("n1", 8), resource_slice("n2", 8)], PoolObservation(2, 2)),
    ([node("n1"), node("n2", ready=False)], [resource_slice("n1", 8), resource_slice("n2", 8)], PoolObservation(2, 1)),
    ([node("n1"), node("n2")], [resource_slice("n1", 8), resource_slice("n2", 7)], PoolObservation(2, 1)),
    ([node("n1"), node("n2")], [resource_slice("n1", 8), resource_slice("n2", 8, driver="gpu.amd.com")],
     PoolObservation(2, 1)),
    ([node("n1"), node("x", pool=None)], [resource_slice("n1", 4), resource_slice("n1", 4)], PoolObservation(1, 1)),
], ids=["all usable", "a NotReady node", "a node missing a GPU", "another driver's devices do not count",
        "slices add up; unlabelled nodes are not the pool's"])
def test_usable_nodes_are_ready_and_publish_the_class_devices(nodes: list[dict[str, Any]],
                                                              slices: list[dict[str, Any]],
                                                              want: PoolObservation) -> None:
    assert usable_nodes(FLEET.clusters[0], FLEET, nodes, slices) == {"gpu": want}


def wire(value: Any) -> Any:
    return json.loads(json.dumps(value), parse_int=float)


OBJECTS = dump_objects(Manifests(FLEET, Workloads(deployments=(deployment("m", standalone(request(count=8))),))))
UP = ClusterObservation(True, {"gpu": PoolObservation(2, 2)})
DOWN = ClusterObservation(False, {}, error="connection refused")


def run(olds: dict[str, Any], a: ClusterObservation, at: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(provider_module.time, "time", lambda: float(at))
    news = {"objects": objects_text(OBJECTS), "strict": False, "observed": observations_to_json({"a": a, "b": UP})}
    result = PlacementProvider().check(wire(olds), wire(news))
    assert result.failures == []
    return json.loads(json.dumps(result.inputs))


def where(outputs: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted((r["cluster"], r["index"]) for r in json.loads(outputs["placement"])["replicas"])


def test_an_outage_past_the_grace_moves_the_replica_and_the_clock_lives_in_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = run({}, UP, T0, monkeypatch)
    assert where(first) == [("a", 0)] and first["outages"] == {}
    down = run(first, DOWN, T0 + 60, monkeypatch)
    assert where(down) == [("a", 0)] and down["outages"] == {"a": T0 + 60}
    still = run(down, DOWN, T0 + 60 + 599, monkeypatch)
    assert where(still) == [("a", 0)], "within the grace nothing moves"
    moved = run(still, DOWN, T0 + 60 + 600, monkeypatch)
    assert where(moved) == [("b", 0)]
    [move] = moved["capacity"]["moves"]
    assert (move["deployment"], move["from"], move["to"]) == ("ml/m", "a", "b")
    assert "past its grace period of 600s" in move["why"]
    back = run(moved, UP, T0 + 2000, monkeypatch)
    assert where(back) == [("b", 0)] and back["outages"] == {}, "nothing moves back"


def test_the_report_shows_declared_and_observed_capacity_per_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = run({}, ClusterObservation(True, {"gpu": PoolObservation(2, 1)}), T0, monkeypatch)
    assert outputs["capacity"]["pools"] == [
        {"cluster": "a", "pool": "gpu", "declared": 2, "observed": 1, "planned": 1},
        {"cluster": "b", "pool": "gpu", "declared": 2, "observed": 2, "planned": 2}]


def test_a_malformed_observation_is_a_check_failure() -> None:
    result = PlacementProvider().check({}, wire({"objects": objects_text(OBJECTS), "strict": False, "observed": {"a": {"pools": 1}}}))
    assert [f.property for f in result.failures] == ["observed"]
