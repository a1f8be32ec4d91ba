"""Observed capacity in the status written back (control-cluster mode): each InferenceCluster shows its
health and its pools' declared, observed and planned nodes, and each ModelDeployment the replicas moved
off a cluster down past its grace period and why. Computed on the objects recorded from a real API
server (tests/data/control-cluster), observed through `scheduling.observed` and placed by the real
scheduler; every document validates against the status schema of the generated CRDs.
"""

from __future__ import annotations

from typing import Any

from modelplane.compose.status_documents import statuses
from modelplane.scheduling import place
from modelplane.scheduling.observed import ClusterObservation, PoolObservation, moves, observe, report
from tests.api import crd_schema
from tests.api.test_served import recorded_items
from tests.compose.test_status import served

T0 = 1_800_000_000
DOWN = ClusterObservation(False, {}, error="connection refused")


def engine(value: Any) -> Any:
    """What the Pulumi engine hands back: null values dropped."""
    if isinstance(value, dict):
        return {key: engine(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [engine(item) for item in value]
    return value


def written(observations: dict[str, ClusterObservation], outages: dict[str, int], now: int,
            carried: list[dict[str, Any]] | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    source = served()
    fleet, work = source.manifests.fleet, source.manifests.workloads
    before = place(fleet, work)
    seen = observe(fleet, observations, outages, now)
    after = place(seen.fleet, work, before)
    capacity = report(seen, moves(before, after, seen), carried or [])
    return statuses(source.manifests, after, source.observed, source.skipped, {}, "", capacity=engine(capacity)), capacity


def fits(key: str, status: dict[str, Any]) -> list[str]:
    kind, _, rest = key.partition("/")
    namespace, _, name = rest.rpartition("/")
    obj = next(i for i in recorded_items() if i["kind"] == kind and i["metadata"]["name"] == name)
    return crd_schema.problems({**{k: obj[k] for k in ("apiVersion", "kind", "spec")},
                                "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                                "status": status})


def test_each_cluster_shows_its_health_and_declared_and_observed_capacity_per_pool() -> None:
    found, _ = written({"onprem-us-east": ClusterObservation(True, {"h100": PoolObservation(2, 1)})}, {}, T0)
    onprem = found["InferenceCluster/onprem-us-east"]["status"]
    assert onprem == {"health": "Up", "pools": [{"name": "h100", "declared": 2, "observed": 1, "planned": 1}]}
    gke = found["InferenceCluster/gke-us-central"]["status"]
    assert gke["health"] == "Unobserved" and gke["pools"] == [{"name": "l4", "declared": 1, "planned": 1}]
    assert "not read this run" in gke["reason"]
    for key in ("InferenceCluster/onprem-us-east", "InferenceCluster/gke-us-central"):
        assert fits(key, found[key]["status"]) == [], key


def test_a_deployment_shows_which_replica_moved_off_a_cluster_down_past_its_grace_and_why() -> None:
    found, capacity = written({"onprem-us-east": DOWN}, {"onprem-us-east": T0}, T0 + 600)
    cluster = found["InferenceCluster/onprem-us-east"]["status"]
    assert (cluster["health"], cluster["downSince"]) == ("Expired", T0)
    assert cluster["reason"].startswith("unreachable (connection refused), past its grace period of 600s")
    assert cluster["pools"] == [{"name": "h100", "declared": 2, "planned": 2}], "not read: no observed count"
    status = found["ModelDeployment/ml-team/qwen3-8b"]["status"]
    [move] = status["moves"]
    assert (move["source"], move["index"]) == ("onprem-us-east", 0)
    assert move["reason"] == f"cluster onprem-us-east is {cluster['reason']}"
    gained = {p["cluster"] for p in status["placements"]} - {"onprem-us-east"}
    assert move.get("target") in gained | {None}
    assert "onprem-us-east" not in status["clusters"]
    assert fits("ModelDeployment/ml-team/qwen3-8b", status) == []
    assert [m["from"] for m in capacity["moves"]] == ["onprem-us-east"]


def test_a_move_stays_in_status_while_its_cluster_is_down_and_goes_when_it_is_back() -> None:
    _, first = written({"onprem-us-east": DOWN}, {"onprem-us-east": T0}, T0 + 600)
    # The next run: the replica is already elsewhere, so this run moves nothing, but the reason lasts.
    still, _ = written({"onprem-us-east": DOWN}, {"onprem-us-east": T0}, T0 + 900, first["moves"])
    assert [m["source"] for m in still["ModelDeployment/ml-team/qwen3-8b"]["status"]["moves"]] == ["onprem-us-east"]
    back, _ = written({"onprem-us-east": ClusterObservation(True, {"h100": PoolObservation(2, 2)})}, {}, T0 + 1200,
                      first["moves"])
    assert "moves" not in back["ModelDeployment/ml-team/qwen3-8b"]["status"]
    assert back["InferenceCluster/onprem-us-east"]["status"]["health"] == "Up"


def test_without_observed_capacity_a_cluster_status_is_empty() -> None:
    source = served()
    placement = place(source.manifests.fleet, source.manifests.workloads)
    found = statuses(source.manifests, placement, source.observed, source.skipped, {}, "")
    assert {key: entry["status"] for key, entry in found.items() if key.startswith("InferenceCluster/")} == {
        "InferenceCluster/gke-us-central": {}, "InferenceCluster/onprem-us-east": {}}, \
        "nothing to say (an empty status clears a refusal an earlier run wrote)"
