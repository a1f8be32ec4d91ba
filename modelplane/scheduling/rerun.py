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
(they only skip clusters where a kind of replica cannot fit again, so trying them again gives the
same placement). `stop(stage, scheduled)` may end a rerun early (None): the capacity search ends one
as soon as a deployment it must not shorten has too few replicas.

Cost, measured on the generated fleet (benchmarks/capacity_fleet.py): see capacity.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

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
    refused: dict[PoolKey, int]
    """Per pool, the first stage in which a check stopped at it."""

    def start(self, pools: Iterable[PoolKey]) -> int | None:
        """The first stage a raise of `pools` can change; None when it changes nothing."""
        return min((self.refused[pool] for pool in pools if pool in self.refused), default=None)

    def replicas(self) -> list[Replica]:
        return [replica for commits in (self.kept, *self.filled) for replica, _ in commits]


def record(run: Run, previous: Placement | None) -> Record:
    """Plan on `run` (nothing charged yet) and record it."""
    found = _plan(run, previous, {}, -1, None, None)
    assert found is not None, "a plan without `stop` runs to the end"
    return found


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
        run.ledger.charge(replica.deployment, charges)
    for commits in record_.filled[:start]:
        for replica, charges in commits:
            run.ledger.charge(replica.deployment, charges)
    return _plan(run, record_.previous, capacities, start, stop, record_)


def _plan(run: Run, previous: Placement | None, capacities: dict[PoolKey, int], start: int, stop: Stop | None,
          before: Record | None) -> Record | None:
    """Retain (when `start` is -1) and fill from `start` on; the stages before `start` come from `before`."""
    watch = run.ledger.watch = Watch()
    run.commits = []
    if before is None:
        retain(run, previous)
        kept = run.commits
        filled: list[Commits] = []
        scheduled: list[int] = []
    else:
        kept = before.kept
        filled = list(before.filled[:start])
        scheduled = list(before.scheduled[:start])
        watch.refused = {pool: stage for pool, stage in before.refused.items() if stage < start}
    existing: dict[str, list[Replica]] = {}
    for replica, _ in kept:
        existing.setdefault(replica.deployment, []).append(replica)
    deployments = run.workloads.deployments
    for stage in range(max(start, 0), len(deployments)):
        deployment = deployments[stage]
        watch.stage = stage
        run.commits = []
        mine = existing.get(deployment.key, [])
        fill_deployment(run, deployment, mine)
        filled.append(run.commits)
        scheduled.append(len(mine) + len(run.commits))
        if stop is not None and stop(stage, scheduled[-1]):
            run.ledger.watch = run.commits = None
            return None
    run.ledger.watch = run.commits = None
    return Record(run, previous, capacities, kept, tuple(filled), tuple(scheduled), watch.refused)
