"""Observed capacity and the outage grace clock (scheduling/observed.py), through the real scheduler.

Expected values come from the issue's rules: a pool that lost nodes takes fewer new replicas; a
cluster down (unreachable, or no Ready node) past its grace period (default 600 s) has its replicas
re-placed elsewhere; within the grace nothing moves; a flap restarts the clock; nothing moves back.
Every deployment here takes a whole node per replica (8 of 8 GPUs), so counts are nodes.
"""

from __future__ import annotations

from modelplane.scheduling import Placement, place
from modelplane.scheduling.observed import (
    OUTAGE_TAINT,
    ClusterObservation,
    Health,
    PoolObservation,
    moves,
    observe,
    outages,
)
from tests.builders import cluster, deployment, exclusive_pool, fleet, pool, request, standalone, workloads

T0 = 1_800_000_000
FLEET = fleet(cluster("a", exclusive_pool("gpu", nodes=2)), cluster("b", exclusive_pool("gpu", nodes=2)))
WHOLE = standalone(request(count=8))


def up(nodes: int = 2, usable: int | None = None) -> ClusterObservation:
    return ClusterObservation(True, {"gpu": PoolObservation(nodes, nodes if usable is None else usable)})


UNREACHABLE = ClusterObservation(False, {}, error="connection refused")


def slots(placement: Placement) -> list[tuple[str, int]]:
    return sorted((r.cluster, r.index) for r in placement.replicas)


def test_a_pool_that_lost_a_node_plans_against_the_nodes_it_has() -> None:
    seen = observe(FLEET, {"a": up(2, usable=1), "b": up()}, {}, T0)
    assert [(p.cluster, p.declared, p.observed, p.planned) for p in seen.pools] == [("a", 2, 1, 1), ("b", 2, 2, 2)]
    work = workloads(deployment("m", WHOLE, replicas=4))
    before = place(FLEET, work)
    assert slots(before) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    after = place(seen.fleet, work, before)
    # a has room for one: the newest replica there (index 1) is re-placed, b is full, so it is short.
    assert slots(after) == [("a", 0), ("b", 0), ("b", 1)]
    assert moves(before, after, seen) == (), "a lost node is not an outage"


def test_an_autoscaled_pool_is_left_as_declared() -> None:
    autoscaled = fleet(cluster("a", pool("gpu", nodes=1, max_nodes=4)))
    seen = observe(autoscaled, {"a": ClusterObservation(True, {"gpu": PoolObservation(1, 1)})}, {}, T0)
    assert seen.fleet == autoscaled


def test_a_cluster_not_observed_is_planned_as_declared() -> None:
    seen = observe(FLEET, {"b": up()}, {}, T0)
    assert seen.fleet == FLEET
    assert [(h.cluster, h.health) for h in seen.clusters] == [("a", Health.UNOBSERVED), ("b", Health.UP)]


def test_unreachable_within_the_grace_is_planned_as_declared() -> None:
    work = workloads(deployment("m", WHOLE, replicas=1))
    before = place(FLEET, work)
    assert slots(before) == [("a", 0)]
    seen = observe(FLEET, {"a": UNREACHABLE, "b": up()}, {"a": T0}, T0 + 599)
    assert seen.clusters[0].health is Health.DOWN and "within its grace period of 600s" in seen.clusters[0].why
    assert seen.fleet == FLEET
    assert slots(place(seen.fleet, work, before)) == [("a", 0)]


def test_a_reachable_cluster_with_no_labelled_node_is_planned_as_declared() -> None:
    seen = observe(FLEET, {"a": ClusterObservation(True, {}), "b": up()}, {}, T0)
    assert seen.fleet == FLEET and seen.outages == {}
    assert seen.clusters[0].health is Health.UNOBSERVED and "modelplane.ai/pool" in seen.clusters[0].why


def test_unreachable_past_the_grace_moves_the_replica_and_says_why() -> None:
    work = workloads(deployment("m", WHOLE, replicas=1))
    before = place(FLEET, work)
    seen = observe(FLEET, {"a": UNREACHABLE, "b": up()}, {"a": T0}, T0 + 600)
    assert seen.outages == {"a": T0}
    assert any(t.key == OUTAGE_TAINT and t.effect == "NoExecute" for t in seen.fleet.cluster("a").spec.taints)
    after = place(seen.fleet, work, before)
    assert slots(after) == [("b", 0)]
    [move] = moves(before, after, seen)
    assert (move.deployment, move.source, move.index, move.target) == ("ml/m", "a", 0, "b")
    assert move.why == ("cluster a is unreachable (connection refused), past its grace period of 600s: its "
                        "replicas are re-placed on other clusters")


def test_no_ready_node_counts_as_down_and_the_grace_is_the_clusters_own() -> None:
    short = fleet(cluster("a", exclusive_pool("gpu", nodes=2)), cluster("b", exclusive_pool("gpu", nodes=2)))
    spec = short.clusters[0].spec.model_copy(update={"outage_grace_period_seconds": 60})
    short = fleet(short.clusters[0].model_copy(update={"spec": spec}), short.clusters[1])
    seen = observe(short, {"a": up(2, usable=0), "b": up()}, {"a": T0}, T0 + 60)
    assert seen.clusters[0].health is Health.EXPIRED and "no node of its pools is Ready" in seen.clusters[0].why


def test_the_clock_starts_when_first_seen_down_and_a_flap_restarts_it() -> None:
    assert outages(FLEET, {"a": UNREACHABLE, "b": up()}, {}, T0) == {"a": T0}
    assert outages(FLEET, {"a": UNREACHABLE, "b": up()}, {"a": T0}, T0 + 300) == {"a": T0}
    assert outages(FLEET, {"a": up(), "b": up()}, {"a": T0}, T0 + 400) == {}
    assert outages(FLEET, {"a": UNREACHABLE, "b": up()}, {}, T0 + 500) == {"a": T0 + 500}


def test_a_cluster_flapping_within_the_grace_moves_nothing() -> None:
    work = workloads(deployment("m", WHOLE, replicas=2))
    placement = place(FLEET, work)
    clock: dict[str, int] = {}
    for step, seen_a in enumerate([UNREACHABLE, up(), UNREACHABLE, up(), UNREACHABLE]):
        seen = observe(FLEET, {"a": seen_a, "b": up()}, clock, T0 + 300 * step)
        clock = dict(seen.outages)
        placement = place(seen.fleet, work, placement)
        assert slots(placement) == [("a", 0), ("b", 0)], f"step {step}"


def test_a_moved_replica_does_not_move_back_when_the_cluster_returns() -> None:
    work = workloads(deployment("m", WHOLE, replicas=1))
    before = place(FLEET, work)
    moved = place(observe(FLEET, {"a": UNREACHABLE, "b": up()}, {"a": T0}, T0 + 601).fleet, work, before)
    assert slots(moved) == [("b", 0)]
    back = observe(FLEET, {"a": up(), "b": up()}, {}, T0 + 900)
    assert slots(place(back.fleet, work, moved)) == [("b", 0)]
