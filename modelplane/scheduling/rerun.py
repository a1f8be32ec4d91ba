"""Planning again with some pools raised, from the first stage the raise can change.

`record(run, previous)` plans like `place()` (retain, then fill deployment by deployment in fill
order) under a `Watch`, and keeps a `Record`: the replicas each stage charged and their charges
(stage -1 is retain, stage i fills the i-th deployment), how many replicas each deployment has, and
per pool the first stage in which a ledger check stopped at it (was refused there).

`rerun(record, capacities, start, stop)` is the same plan with the pools of `capacities` raised
(never lowered). It starts at `record.start(pools)` and not earlier, because two runs that differ
only in the capacity of raised pools are identical up to the first check whose answer differs:
- a check that passed still passes (a pool's need only depends on its pods, and more capacity
  admits whatever less admitted);
- a check that stopped at an unraised pool still stops there (same pool, same load, since the runs
  were identical until then);
so only a check that stopped at a raised pool can change, and the first one is in stage
`start(pools)`. Before it, rerun only charges what the record charged (the ledger's state depends
on the pods each pool holds, not on their order), then plans the rest. A raise of pools at which no
check ever stopped changes nothing, and `start` says so (None). The fresh run has no `dead` marks
but the marks `before` made in the stages it shares, on clusters whose pools are the same in both
(dead marks only skip clusters where a kind of replica cannot fit again; trying one again would
give the same placement, only slower). `stop(stage, scheduled)` may end a rerun early (None): the capacity search ends one
as soon as a deployment it must not shorten has too few replicas.

Cost, measured on the generated fleet (benchmarks/capacity_fleet.py): see capacity.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from modelplane.api import ModelDeployment
from modelplane.invariants import present
from modelplane.scheduling.fill import fill_deployment
from modelplane.scheduling.ledger import PoolKey, Watch
from modelplane.scheduling.packing import Use
from modelplane.scheduling.placement import Placement, Replica
from modelplane.scheduling.retain import retain
from modelplane.scheduling.run import Run

Commits = list[tuple[Replica, dict[PoolKey, Use]]]
Stop = Callable[[int, int], bool]
"""(stage, replicas the stage's deployment has) -> whether to give up on the run."""


class RaiseError(ValueError):
    """A rerun asked to lower a pool: only raising keeps the runs equal up to the start stage."""


@dataclass(frozen=True)
class Record:
    run: Run
    """The run, its ledger as the plan left it."""
    previous: Placement | None
    capacities: dict[PoolKey, int]
    """The pools whose capacity differs from the snapshot's, and theirs."""
    kept: Commits
    filled: tuple[Commits, ...]
    """Per deployment in fill order, the replicas fill placed and their charges."""
    scheduled: tuple[int, ...]
    """Per deployment in fill order, its replicas."""
    refusals: tuple[frozenset[PoolKey], ...]
    """Per stage from -1 (retain) on, the pools at which a check stopped."""
    marks: tuple[tuple[tuple[tuple[int, ...], int], ...], ...]
    """Per fill stage, the (kind, cluster position) it marked dead (`Run.dead`)."""

    @cached_property
    def refused(self) -> dict[PoolKey, int]:
        """Per pool, the first stage in which a check stopped at it."""
        first: dict[PoolKey, int] = {}
        for stage, pools in enumerate(self.refusals, -1):
            for pool in pools:
                first.setdefault(pool, stage)
        return first

    def start(self, pools: Iterable[PoolKey]) -> int | None:
        """The first stage a raise of `pools` can change; None when it changes nothing."""
        refused = self.refused
        return min((refused[pool] for pool in pools if pool in refused), default=None)


def record(run: Run, previous: Placement | None) -> Record:
    """Plan on `run` (nothing charged yet) and record it."""
    return present(_plan(run, previous, {}, -1, None, None), "a plan without `stop` runs to the end")


def rerun(record_: Record, capacities: dict[PoolKey, int], start: int, stop: Stop | None) -> Record | None:
    """The plan of `record_` with `capacities` (each at least the record's), planned again from
    `start` (`record_.start` of the raised pools, or earlier); None when `stop` gave up."""
    ledger = record_.run.ledger
    for pool, capacity in capacities.items():
        if capacity < ledger.capacity(pool):
            raise RaiseError(f"pool {pool[0]}/{pool[1]}: {capacity} nodes is fewer than the {ledger.capacity(pool)} "
                             "of the recorded plan")
    run = record_.run.fork(capacities)
    if start < 0:
        return _plan(run, record_.previous, capacities, -1, stop, None)
    for replica, charges in record_.kept:
        run.ledger.restore(replica.deployment, charges)
    for commits in record_.filled[:start]:
        for replica, charges in commits:
            run.ledger.restore(replica.deployment, charges)
    return _plan(run, record_.previous, capacities, start, stop, record_)


def _plan(run: Run, previous: Placement | None, capacities: dict[PoolKey, int], start: int, stop: Stop | None,
          before: Record | None) -> Record | None:
    """Retain (without `before`) and fill from `start` on; with `before`, the stages before `start`
    are its own, and so is any later stage that reads no pool whose capacity or load differs from
    `before`'s: the stage's deployment would try the same clusters against the same pools, so it
    places what `before` did, and is charged without being planned."""
    watch = run.ledger.watch = Watch()
    run.commits = []
    differ: dict[PoolKey, tuple[int, str]] = {}
    if before is None:
        retain(run, previous)
        kept = run.commits
        filled: list[Commits] = []
        scheduled: list[int] = []
        refusals = [frozenset(watch.refused)]
        marks: list[tuple[tuple[tuple[int, ...], int], ...]] = []
    else:
        kept = before.kept
        filled = list(before.filled[:start])
        scheduled = list(before.scheduled[:start])
        refusals = list(before.refusals[:start + 1])
        marks = list(before.marks[:start])
        for pool, capacity in capacities.items():
            if capacity != before.run.ledger.capacity(pool):
                differ[pool] = _where(run, pool)
        for made in marks:
            _mark(run, made, differ)
    existing: dict[str, list[Replica]] = {}
    for replica, _ in kept:
        existing.setdefault(replica.deployment, []).append(replica)
    deployments = run.workloads.deployments
    for stage in range(max(start, 0), len(deployments)):
        deployment = deployments[stage]
        mine = existing.get(deployment.key, [])
        if before is not None and not _reads(run, deployment, differ):
            for replica, charges in before.filled[stage]:
                run.ledger.restore(replica.deployment, charges)
            filled.append(before.filled[stage])
            scheduled.append(before.scheduled[stage])
            refusals.append(before.refusals[stage + 1])
            marks.append(before.marks[stage])
            _mark(run, before.marks[stage], differ)
            continue
        watch.refused = set()
        run.commits = []
        kind = run.kind(deployment)
        dead = run.dead.setdefault(kind, set())
        was = set(dead)
        fill_deployment(run, deployment, mine)
        filled.append(run.commits)
        scheduled.append(len(mine) + len(run.commits))
        refusals.append(frozenset(watch.refused))
        marks.append(tuple((kind, position) for position in sorted(dead - was)))
        if before is not None and not _same(run.commits, before.filled[stage]):
            for commits in (run.commits, before.filled[stage]):
                for _, charges in commits:
                    differ.update((pool, _where(run, pool)) for pool in charges if pool not in differ)
        if stop is not None and stop(stage, scheduled[-1]):
            run.ledger.watch = run.commits = None
            return None
    run.ledger.watch = run.commits = None
    return Record(run, previous, capacities, kept, tuple(filled), tuple(scheduled), tuple(refusals), tuple(marks))


def _mark(run: Run, marks: tuple[tuple[tuple[int, ...], int], ...], differ: dict[PoolKey, tuple[int, str]]) -> None:
    """Take over `before`'s dead marks of a stage that was the same in both runs, except on the
    clusters whose pools differ: elsewhere the cluster's pools held the same then, and a kind of
    replica that could not fit them never will (loads only grow)."""
    if not marks:
        return
    changed = {position for position, _ in differ.values()}
    for kind, position in marks:
        if position not in changed:
            run.dead.setdefault(kind, set()).add(position)


def _where(run: Run, pool: PoolKey) -> tuple[int, str]:
    """The pool's cluster position and class."""
    cluster = run.snapshot.cluster(pool[0])
    view = cluster.pool(pool[1]) if cluster is not None else None
    if cluster is None or view is None:
        raise KeyError(pool)
    return cluster.position, view.class_name


def _reads(run: Run, deployment: ModelDeployment, pools: dict[PoolKey, tuple[int, str]]) -> bool:
    """Whether filling the deployment may read any of `pools`: one on a cluster it may try, of a
    class one of its engines claims on (no other pool is in any of its options)."""
    if not pools:
        return False
    clusters, classes = run.candidates(deployment).members, run.claimed(deployment)
    return any(position in clusters and name in classes for position, name in pools.values())


def _same(these: Commits, those: Commits) -> bool:
    return len(these) == len(those) and all(
        mine.cluster == theirs.cluster and mine.index == theirs.index and mine.engines == theirs.engines
        and charges == their_charges for (mine, charges), (theirs, their_charges) in zip(these, those, strict=True))
