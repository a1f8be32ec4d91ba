"""Planning again from the first stage a raise can change gives the plan of the raised fleet itself."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet, Workloads
from modelplane.scheduling import place
from modelplane.scheduling.ledger import Ledger, PoolKey
from modelplane.scheduling.packing import Use
from modelplane.scheduling.placement import Replica
from modelplane.scheduling import rerun as rerun_module
from modelplane.scheduling.rerun import RaiseError, Record, record, rerun
from modelplane.scheduling.run import Run
from modelplane.scheduling.whatif import SetPoolNodes, apply_edits
from tests.builders import cluster, deployment, exclusive_pool, fleet, workloads
from tests.scheduling.test_properties import CLASSES, SETTINGS, clusters, deployments


def _slots(replicas: list[Replica] | tuple[Replica, ...]) -> list[tuple[str, str, int, object]]:
    return sorted(((r.deployment, r.cluster, r.index, r.engines) for r in replicas), key=lambda s: s[:3])


def _replicas(found: Record) -> list[Replica]:
    return [replica for commits in (found.kept, *found.filled) for replica, _ in commits]


def _raise(found: Record, edits: list[SetPoolNodes], pool: PoolKey, nodes: int) -> tuple[Record, list[SetPoolNodes]]:
    capacity = found.run.ledger.capacity(pool) + nodes
    edits = [*edits, SetPoolNodes(pool[0], pool[1], capacity)]
    start = found.start([pool])
    if start is None:
        return found, edits
    again = rerun(found, {**found.capacities, pool: capacity}, start, None)
    assert again is not None, "a rerun without `stop` runs to the end"
    return again, edits


@SETTINGS
@given(clusters(), deployments(), st.booleans(), st.data())
def test_a_rerun_is_the_plan_of_the_raised_fleet(cs, ds, sticky, data) -> None:
    f, w = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    previous = place(f, w) if sticky else None
    found, edits = record(Run(f, w), previous), []
    pools = sorted((c.name, p.name) for c in cs for p in c.spec.node_pools)
    for _ in range(2):  # a rerun of a rerun too: what the capacity search builds on
        pool = data.draw(st.sampled_from(pools))
        found, edits = _raise(found, edits, pool, data.draw(st.integers(1, 3)))
        want = place(*apply_edits(f, w, edits), previous)
        assert _slots(_replicas(found)) == _slots(want.replicas), edits
        assert found.scheduled == tuple(want.deployments[d.key].scheduled for d in w.deployments)


@SETTINGS
@given(clusters(), deployments(), st.booleans(), st.data())
def test_a_rerun_stops_exactly_when_the_plan_of_the_raised_fleet_has_a_deployment_below_its_floor(
        cs, ds, sticky, data) -> None:
    """What the capacity search asks: a floor per deployment (its replicas in the plan before the
    raise, or all it wants), and a stop at the first deployment from `start` on below it, planned
    again or not (before `start` the plans are the same)."""
    f, w = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    previous = place(f, w) if sticky else None
    found, edits = record(Run(f, w), previous), []
    pools = sorted((c.name, p.name) for c in cs for p in c.spec.node_pools)
    for _ in range(data.draw(st.integers(0, 1))):  # on top of a rerun too
        found, edits = _raise(found, edits, data.draw(st.sampled_from(pools)), data.draw(st.integers(1, 3)))
    floor = [data.draw(st.sampled_from([scheduled, d.spec.replicas])) for scheduled, d in zip(found.scheduled, ds)]
    pool, nodes = data.draw(st.sampled_from(pools)), data.draw(st.integers(1, 3))
    capacity = found.run.ledger.capacity(pool) + nodes
    start = found.start([pool])
    want = place(*apply_edits(f, w, [*edits, SetPoolNodes(pool[0], pool[1], capacity)]), previous)
    if start is None:
        assert found.scheduled == tuple(want.deployments[d.key].scheduled for d in ds), "the raise changes nothing"
        return
    again = rerun(found, {**found.capacities, pool: capacity}, start, lambda stage, scheduled: scheduled < floor[stage])
    assert (again is None) == any(want.deployments[d.key].scheduled < floor[stage]
                                  for stage, d in enumerate(ds) if stage >= start)
    if again is not None:
        assert _slots(_replicas(again)) == _slots(want.replicas)


def test_a_raise_of_a_pool_no_check_stopped_at_changes_nothing() -> None:
    f = fleet(cluster("a", exclusive_pool("gpu", nodes=3)), cluster("b", exclusive_pool("gpu", nodes=1)))
    found = record(Run(f, workloads(deployment("d", replicas=2))), None)
    assert found.refused == {}, "both replicas fit on the first tries: nothing was refused"
    assert found.start([("a", "gpu"), ("b", "gpu")]) is None


def test_a_pool_that_refused_starts_the_rerun_at_its_stage() -> None:
    f = fleet(cluster("a", exclusive_pool("gpu", nodes=1)))
    found = record(Run(f, workloads(deployment("d1"), deployment("d2"))), None)
    assert found.start([("a", "gpu")]) == 1, "d1 (stage 0) took the node, d2 (stage 1) was refused"
    again = rerun(found, {("a", "gpu"): 2}, 1, None)
    assert again is not None and again.scheduled == (1, 1)
    assert rerun(found, {("a", "gpu"): 2}, 1, lambda stage, scheduled: True) is None, "stop gives up"


def test_a_rerun_never_lowers_a_pool() -> None:
    found = record(Run(fleet(cluster("a", exclusive_pool("gpu", nodes=2))), workloads(deployment("d"))), None)
    with pytest.raises(RaiseError, match="pool a/gpu: 1 nodes is fewer than the 2"):
        rerun(found, {("a", "gpu"): 1}, 0, None)


def _state(ledger: Ledger) -> dict[PoolKey, tuple[object, ...]]:
    return {pool: (load.capacity, load.whole, dict(load.shared), load.sharing, load.shared_need, load.need,
                   ledger.holders(pool))
            for pool, load in ledger.loads.items()}


def _charged(found: Record, stage: int, capacities: dict[PoolKey, int]) -> Ledger:
    """A fresh ledger charged replica by replica with what the record charged before `stage`."""
    ledger = Ledger(found.run.snapshot, capacities)
    for replica, charges in _commits(found, stage):
        ledger.restore(replica.deployment, charges)
    return ledger


def _commits(found: Record, stage: int | None = None) -> list[tuple[Replica, dict[PoolKey, Use]]]:
    """What retain and the fill stages before `stage` (all when None) charged, replica by replica."""
    return [*found.kept, *(commit for commits in found.filled[:stage] for commit in commits)]


@SETTINGS
@given(clusters(), deployments(), st.booleans(), st.integers(1, 3), st.data())
def test_the_ledger_before_a_stage_is_the_records_charges_before_it(cs, ds, sticky, checkpoints, data) -> None:
    """Checkpoints (every `spacing` stages, copied on write) and charges summed per stage give the
    ledger that charging the record replica by replica gives, whatever order the stages are asked
    in, and charging a copy never changes a checkpoint or another copy."""
    f, w = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    found = record(Run(f, w), place(f, w) if sticky else None)
    pools = sorted((c.name, p.name) for c in cs for p in c.spec.node_pools)
    stages = data.draw(st.lists(st.integers(0, len(ds) - 1), min_size=1, max_size=6))
    with mock.patch("modelplane.scheduling.rerun.CHECKPOINTS", checkpoints):
        copies = []
        for stage in stages:
            pool = data.draw(st.sampled_from(pools))
            capacities = {**found.capacities, pool: found.run.ledger.capacity(pool) + data.draw(st.integers(0, 2))}
            got = found.ledger_before(stage, capacities)
            got.settle()  # the stages after the checkpoint are deferred (`Ledger.defer`)
            assert _state(got) == _state(_charged(found, stage, capacities)), stage
            copies.append((got, stage, capacities))
            for replica, charges in _commits(found):  # charge the copy: nothing else may change
                got.restore(replica.deployment, charges)
        for stage, ledger in found.checkpoints.items():
            assert _state(ledger) == _state(_charged(found, stage, found.capacities)), stage
        for got, stage, capacities in copies:
            want = _charged(found, stage, capacities)
            for replica, charges in _commits(found):
                want.restore(replica.deployment, charges)
            assert _state(got) == _state(want), stage


def _fills(found: Record, capacities: dict[PoolKey, int], start: int) -> tuple[Record, list[str]]:
    """The rerun, and the deployments it planned again (in order)."""
    planned: list[str] = []
    real = rerun_module.fill_deployment

    def fill(run, deployment, existing, skipped):  # type: ignore[no-untyped-def]
        planned.append(deployment.key)
        return real(run, deployment, existing, skipped)

    with mock.patch.object(rerun_module, "fill_deployment", fill):
        again = rerun(found, capacities, start, None)
    assert again is not None, "a rerun without `stop` runs to the end"
    return again, planned


def test_a_stage_whose_checks_answer_as_they_did_is_not_planned_again() -> None:
    """d0 may only run on a (1 node) and wants 2; d1 then finds a full and goes to b. Raising a to
    2 nodes lets d0 take the new node, so d1's check at a (raised, the pool it stopped at) asks 1
    node of a pool whose 2 are held: the same no, and d1 is charged as recorded, not planned."""
    f = fleet(cluster("a", exclusive_pool("gpu", nodes=1), labels={"region": "eu"}),
              cluster("b", exclusive_pool("gpu", nodes=4)))
    w = workloads(deployment("d0", replicas=2, selector={"region": "eu"}), deployment("d1"))
    found = record(Run(f, w), None)
    assert found.scheduled == (1, 1) and found.start([("a", "gpu")]) == 0
    again, planned = _fills(found, {("a", "gpu"): 2}, 0)
    assert planned == ["ml/d0"]
    want = place(*apply_edits(f, w, [SetPoolNodes("a", "gpu", 2)]))
    assert _slots(_replicas(again)) == _slots(want.replicas) and again.scheduled == (2, 1)


def test_a_cluster_dead_in_the_record_and_still_without_room_is_tried_not_the_stage_planned_again() -> None:
    """d0 may only run on a (1 node), wants 2, and marks a dead for the kind; d1 (same kind) passes
    over a as dead and gets 1 replica on b. With a raised to 2, d0 fills a without a failed try, so
    a is not dead when d1's turn comes; it has no room for d1 either: d1 is not planned again, a is
    tried (and marked dead, its read kept), and a second raise of a starts at d1's stage."""
    f = fleet(cluster("a", exclusive_pool("gpu", nodes=1), labels={"region": "eu"}),
              cluster("b", exclusive_pool("gpu", nodes=1)))
    w = workloads(deployment("d0", replicas=2, selector={"region": "eu"}), deployment("d1", replicas=2))
    found = record(Run(f, w), None)
    a, b = (found.run.snapshot.position[name] for name in ("a", "b"))
    assert found.scheduled == (1, 1) and found.skipped[1] == {a}, "d1 passed over a as dead"
    again, planned = _fills(found, {("a", "gpu"): 2}, 0)
    assert planned == ["ml/d0"]
    assert {position for _, position in again.marks[1]} == {a, b} and again.skipped[1] == frozenset()
    want = place(*apply_edits(f, w, [SetPoolNodes("a", "gpu", 2)]))
    assert _slots(_replicas(again)) == _slots(want.replicas) and again.scheduled == (2, 1)
    assert again.start([("a", "gpu")]) == 1, "d1's try at a was refused there"
    third = rerun(again, {("a", "gpu"): 3}, 1, None)
    want = place(*apply_edits(f, w, [SetPoolNodes("a", "gpu", 3)]))
    assert third is not None and _slots(_replicas(third)) == _slots(want.replicas) and third.scheduled == (2, 2)


def _visited(found: Record, capacities: dict[PoolKey, int], start: int, every: bool
             ) -> tuple[Record, list[int], set[int]]:
    """The rerun, the stages it visited (asked `affect` of), and those among them `affect` or
    `revived` found changed; with `every`, without the index (`Record.readers`): every stage from
    `start` on is visited, as before the index."""
    visited: list[int] = []
    changed: set[int] = set()
    real_affect, real_revived = rerun_module._Differences.affect, rerun_module._Differences.revived
    real_ahead = rerun_module._Differences.ahead

    def affect(self, run, before, stage):  # type: ignore[no-untyped-def]
        visited.append(stage)
        found = real_affect(self, run, before, stage)
        if found:
            changed.add(stage)
        return found

    def revived(self, run, before, stage):  # type: ignore[no-untyped-def]
        found = real_revived(self, run, before, stage)
        if found:
            changed.add(stage)
        return found

    def ahead(self, before, stage):  # type: ignore[no-untyped-def]
        return stage if every else real_ahead(self, before, stage)

    with mock.patch.object(rerun_module._Differences, "affect", affect), \
            mock.patch.object(rerun_module._Differences, "revived", revived), \
            mock.patch.object(rerun_module._Differences, "ahead", ahead):
        again = rerun(found, capacities, start, None)
    assert again is not None, "a rerun without `stop` runs to the end"
    return again, visited, changed


def _recorded(found: Record) -> tuple[object, ...]:
    return (_slots(_replicas(found)), found.scheduled, found.refusals, found.marks, found.passes, found.skipped,
            [reads.checks for reads in found.reads], found.capacities, _state(found.run.ledger))


@SETTINGS
@given(clusters(), deployments(), st.booleans(), st.data())
def test_a_rerun_that_jumps_by_the_index_is_the_rerun_that_visits_every_stage(cs, ds, sticky, data) -> None:
    """The stages `ahead` jumps over are exactly ones `affect` and `revived` pass: the record and the
    ledger are those of the rerun that visits every stage, a rerun of a rerun too."""
    f, w = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    found = record(Run(f, w), place(f, w) if sticky else None)
    pools = sorted((c.name, p.name) for c in cs for p in c.spec.node_pools)
    for _ in range(2):
        pool = data.draw(st.sampled_from(pools))
        capacities = {**found.capacities, pool: found.run.ledger.capacity(pool) + data.draw(st.integers(1, 3))}
        start = found.start([pool])
        if start is None:
            continue
        jumped, visited, _ = _visited(found, capacities, start, every=False)
        walked, _, changed = _visited(found, capacities, start, every=True)
        assert changed <= set(visited), "every stage found changed when all are visited is visited"
        assert _recorded(jumped) == _recorded(walked), capacities
        assert visited == sorted(set(visited)), "each stage is visited once, in order"
        found = jumped


def test_a_stage_that_read_no_pool_a_raise_changed_is_not_visited() -> None:
    """d0 may only run on a (1 node) and wants 2; d1 only on b. Raising a lets d0 take the new node:
    a holds more pods and is raised, and d1 read only b, so the rerun jumps over d1 (the index has
    it under b only) and takes its replica over as recorded."""
    f = fleet(cluster("a", exclusive_pool("gpu", nodes=1), labels={"region": "eu"}),
              cluster("b", exclusive_pool("gpu", nodes=4), labels={"region": "us"}))
    w = workloads(deployment("d0", replicas=2, selector={"region": "eu"}),
                  deployment("d1", selector={"region": "us"}))
    found = record(Run(f, w), None)
    assert found.readers.passed == {("a", "gpu"): [0], ("b", "gpu"): [1]}
    assert found.readers.refused == {("a", "gpu"): [0]} and found.readers.skipped == {}
    again, visited, _ = _visited(found, {("a", "gpu"): 2}, 0, every=False)
    assert visited == [0], "d0 stopped at the raised pool; d1 is jumped over"
    want = place(*apply_edits(f, w, [SetPoolNodes("a", "gpu", 2)]))
    assert _slots(_replicas(again)) == _slots(want.replicas) and again.scheduled == (2, 1)
