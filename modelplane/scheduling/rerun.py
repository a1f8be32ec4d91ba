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
check ever stopped changes nothing, and `start` says so (None). The charges before `start` come
from a checkpoint of the record's ledger (`Record.ledger_before`, at most `CHECKPOINTS` per record,
copied on write) and a stage's charges are summed per pool: on the 12 x 160 fleet of capacity.py
that took the charges of recorded stages from 448k calls to 45k (and no ledger built per rerun).

From `start` on, a stage is planned again only when one of its checks answers otherwise
(`_Differences`): the record keeps, per stage, every read of a pool its checks made (the use asked,
with what the stage had committed to the pool before, and the answer: `Reads`), the pools at which
they passed, those at which they stopped, and the clusters its walk passed over as dead; the rerun
keeps which pools are raised and, per pool, which pods it holds more or fewer of than the record at
the same stage. Only a pool the stage passed that holds more pods now, or one it stopped at that
is raised or holds fewer, can answer otherwise (a suspect); each read of a suspect is asked again
of the rerun's ledger, and the stage is planned again only if an answer differs. A cluster it
passed over as dead that is not dead now (the stage that marked it was planned again and did not)
is tried as the walk would try it: if a replica still has no room there (the walk marks it dead at
once), the stage places what it placed, with that mark and that try's reads added. Any other stage
places what the record placed and is only charged. The fresh run starts with the dead marks of the
stages it shares with the record (a mark is made where a kind of replica can no longer fit; the
checks that made it give the same answers in both runs, and loads only grow). On the 12 x 160 fleet
of capacity.py, asking the suspects' reads again and trying the revived clusters took the stages
planned again from 22.9k to 10.3k (of 23k, 13.3k had placed what the record placed; 6.9k of those
only for a revived cluster, most of them marked dead by the stage itself, which it marks again).
`stop(stage, scheduled)`, asked after every stage from `start` on (planned again or not), may end
a rerun early (None): the capacity search ends one as soon as a deployment it must not shorten has
too few replicas.

A rerun does not visit every stage from `start` on: `Record.readers` indexes the record's stages
by pool passed, pool stopped at, and (kind, cluster) passed over as dead, and `_Differences.ahead`
jumps to the first stage that read a `fuller` pool and passed, stopped at a `roomier` one, or passed
over a cluster whose record's dead mark a stage planned again did not make (`unmarked`): only
those can make `affect` or `revived` find a change, so every stage before it is taken over in a
tight loop (charged, its marks taken over, `stop` asked). First 49 short deployments of 100 x 1,000
at 110%: of about 554k stages between the reruns' starts and ends, 482k are jumped over and 72k
visited (27.7k of them planned again).

The stages taken over are charged deferred (`Ledger.defer`), and `_plan` settles the pools before
it reads them (every pool before a stage it plans or a cluster it tries, the suspects before asking
their reads): on 100 x 1,000 a rerun takes over about 286 stages and plans about 15, so a pool's
need is computed once for many stages (first 30 short deployments: `Load.add` calls 633k -> 354k).

Cost, measured on the generated fleets (benchmarks/capacity_fleet.py): docs/capacity-search.md.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from heapq import heapify, heappop, heapreplace

from modelplane.api import ModelDeployment
from modelplane.invariants import present
from modelplane.scheduling.fill import fill_deployment
from modelplane.scheduling.ledger import Ledger, PoolKey, Watch
from modelplane.scheduling.packing import Sizes, Use
from modelplane.scheduling.placement import Placement, Replica
from modelplane.scheduling.retain import retain
from modelplane.scheduling.run import Run

Commits = list[tuple[Replica, dict[PoolKey, Use]]]
Checks = dict[PoolKey, frozenset[tuple[Use, bool]]]
"""Per pool, the uses a stage's checks asked of it (with what the stage had charged it before each
check, so every use is asked of the pool's load at the start of the stage) and the answers."""


class Reads:
    """A stage's reads (`Watch.reads`), each with the replicas the stage had committed (in parts:
    the reads of a stage taken over, then those of the attempts `_hopeless` made); turned into
    `Checks` only when a rerun asks (most stages are never asked)."""

    __slots__ = ("parts", "_checks")

    def __init__(self, parts: tuple[tuple[list[tuple[PoolKey, Use, bool, int]], Commits], ...]):
        self.parts = parts
        self._checks: Checks | None = None

    @property
    def passed(self) -> frozenset[PoolKey]:
        return frozenset(pool for reads, _ in self.parts for pool, _, fits, _ in reads if fits)

    @property
    def refused(self) -> frozenset[PoolKey]:
        return frozenset(pool for reads, _ in self.parts for pool, _, fits, _ in reads if not fits)

    @property
    def checks(self) -> Checks:
        """Each use with what the stage's replicas committed before the read charged to the pool
        added: the use asked of the pool's load at the start of the stage."""
        if self._checks is None:
            found: dict[PoolKey, set[tuple[Use, bool]]] = {}
            for reads, commits in self.parts:
                charged: dict[PoolKey, Use] = {}
                done = 0
                for pool, use, fits, committed in reads:
                    for _, charges in commits[done:committed]:
                        for charged_pool, charge in charges.items():
                            held = charged.get(charged_pool)
                            charged[charged_pool] = charge if held is None else held + charge
                    done = max(done, committed)
                    held = charged.get(pool)
                    found.setdefault(pool, set()).add((use if held is None else held + use, fits))
            self._checks = {pool: frozenset(uses) for pool, uses in found.items()}
        return self._checks


@dataclass(frozen=True)
class Readers:
    """A record's fill stages (ascending) by what can make one answer otherwise in a rerun."""

    passed: dict[PoolKey, list[int]]
    """Per pool, the stages with a check that passed it."""
    refused: dict[PoolKey, list[int]]
    """Per pool, the stages with a check that stopped at it."""
    skipped: dict[tuple[tuple[int, ...], int], list[int]]
    """Per (kind, cluster position), the stages of that kind whose walk passed over it as dead."""
    dead: dict[int, list[int]]
    """Per cluster position, the stages of any kind whose walk passed over it as dead."""


Stop = Callable[[int, int], bool]
"""(stage, replicas the stage's deployment has) -> whether to give up on the run."""


CHECKPOINTS = 64
"""At most this many checkpoints per record (`Record.ledger_before`): bounded memory whatever the
fleet's size, and at most `len(filled) / CHECKPOINTS` stages charged per rerun on top of a copy."""


def _spacing(stages: int) -> int:
    return max(1, -(-stages // CHECKPOINTS))


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
    passes: tuple[frozenset[PoolKey], ...]
    """Per fill stage, the pools at which a check passed (read, and did not stop)."""
    skipped: tuple[frozenset[int], ...]
    """Per fill stage, the cluster positions its walk passed over as dead (`fill_deployment`)."""
    reads: tuple[Reads, ...]
    """Per fill stage, what its checks read (`Reads.checks`)."""

    @cached_property
    def refused(self) -> dict[PoolKey, int]:
        """Per pool, the first stage in which a check stopped at it."""
        first: dict[PoolKey, int] = {}
        for stage, pools in enumerate(self.refusals, -1):
            for pool in pools:
                first.setdefault(pool, stage)
        return first

    checkpoints: dict[int, Ledger] = field(default_factory=dict, compare=False, repr=False)
    """Memo of `ledger_before`: the ledger charged with the stages before a checkpoint stage (a
    multiple of `_spacing`), at the record's capacities; never charged itself."""

    def ledger_before(self, start: int, capacities: dict[PoolKey, int]) -> Ledger:
        """A ledger charged with what the record charged before fill stage `start` (retain, and the
        fill stages before it), with `capacities`: a copy (`Ledger.copy`) of the checkpoint at or
        before `start`, charged with the stages between. The ledger's state depends on the pods each
        pool holds, not on the order they came in, and the record's charges fitted at its own
        capacities, which a rerun only raises, so nothing needs checking again. The charges after the
        checkpoint are deferred (`Ledger.defer`): settle a pool before reading it."""
        spacing = _spacing(len(self.filled))
        at = start - start % spacing
        if at not in self.checkpoints:
            below = max((stage for stage in self.checkpoints if stage < at), default=None)
            if below is None:
                walk, below = Ledger(self.run.snapshot, self.capacities), 0
                for replica, charges in self.kept:
                    walk.restore(replica.deployment, charges)
            else:
                walk = self.checkpoints[below].copy({})
            for stage in range(below, at):
                if stage % spacing == 0 and stage not in self.checkpoints:
                    self.checkpoints[stage] = walk.copy({})
                self.charge(walk, stage)
            self.checkpoints[at] = walk
        ledger = self.checkpoints[at].copy(capacities)
        for stage in range(at, start):
            self.charge(ledger, stage)
        return ledger

    def charge(self, ledger: Ledger, stage: int) -> None:
        """Charge what fill stage `stage` charged, summed per pool: a pool's state is the pods it
        holds, whatever charges brought them, so one charge per pool does what one per replica did.
        Deferred (`Ledger.defer`): `_plan` settles the pools before it reads them."""
        charges = self.stage_charges[stage]
        if charges:
            ledger.defer(self.run.workloads.deployments[stage].key, charges)

    @cached_property
    def stage_charges(self) -> tuple[dict[PoolKey, Use], ...]:
        """Per fill stage, what its replicas charged, summed per pool."""
        summed = []
        for commits in self.filled:
            total: dict[PoolKey, Use] = {}
            for _, charges in commits:
                for pool, use in charges.items():
                    held = total.get(pool)
                    total[pool] = use if held is None else held + use
            summed.append(total)
        return tuple(summed)

    @cached_property
    def readers(self) -> Readers:
        """The index `_Differences.ahead` jumps by."""
        passed: dict[PoolKey, list[int]] = {}
        refused: dict[PoolKey, list[int]] = {}
        skipped: dict[tuple[tuple[int, ...], int], list[int]] = {}
        dead: dict[int, list[int]] = {}
        deployments = self.run.workloads.deployments
        for stage, (pools, stopped, over) in enumerate(zip(self.passes, self.refusals[1:], self.skipped, strict=True)):
            for pool in pools:
                passed.setdefault(pool, []).append(stage)
            for pool in stopped:
                refused.setdefault(pool, []).append(stage)
            if over:
                kind = self.run.kind(deployments[stage])
                for position in over:
                    skipped.setdefault((kind, position), []).append(stage)
                    dead.setdefault(position, []).append(stage)
        return Readers(passed, refused, skipped, dead)

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
    if start < 0:
        return _plan(record_.run.fork(Ledger(record_.run.snapshot, capacities)), record_.previous, capacities, -1,
                     stop, None)
    return _plan(record_.run.fork(record_.ledger_before(start, capacities)), record_.previous, capacities, start,
                 stop, record_)


def _plan(run: Run, previous: Placement | None, capacities: dict[PoolKey, int], start: int, stop: Stop | None,
          before: Record | None) -> Record | None:
    """Retain (without `before`) and fill from `start` on; with `before`, the stages before `start`
    are its own, and so is any later stage whose checks all give the answers they gave in `before`
    (`_Differences.affect`): its deployment places what it placed there, and is charged without
    being planned."""
    watch = run.ledger.watch = Watch()
    run.commits = []
    if before is None:
        retain(run, previous)
        kept = run.commits
        filled: list[Commits] = []
        scheduled: list[int] = []
        refusals = [frozenset(pool for pool, _, fits, _ in watch.reads if not fits)]
        marks: list[tuple[tuple[tuple[int, ...], int], ...]] = []
        passes: list[frozenset[PoolKey]] = []
        skipped: list[frozenset[int]] = []
        reads: list[Reads] = []
    else:
        kept = before.kept
        filled = list(before.filled[:start])
        scheduled = list(before.scheduled[:start])
        refusals = list(before.refusals[:start + 1])
        marks = list(before.marks[:start])
        passes = list(before.passes[:start])
        skipped = list(before.skipped[:start])
        reads = list(before.reads[:start])
        differences = _Differences(pool for pool, capacity in capacities.items()
                                   if capacity != before.run.ledger.capacity(pool))
        for made in marks:
            _mark(run, made)
    existing: dict[str, list[Replica]] = {}
    for replica, _ in kept:
        existing.setdefault(replica.deployment, []).append(replica)
    deployments = run.workloads.deployments
    stage = max(start, 0)
    while stage < len(deployments):
        if before is not None and (ahead := differences.ahead(before, stage)) > stage:
            for taken in range(stage, ahead):  # the stages no check of which can answer otherwise
                before.charge(run.ledger, taken)
                if before.marks[taken]:
                    _mark(run, before.marks[taken])
                if stop is not None and stop(taken, before.scheduled[taken]):
                    run.ledger.watch = run.commits = None
                    return None
            filled.extend(before.filled[stage:ahead])
            scheduled.extend(before.scheduled[stage:ahead])
            refusals.extend(before.refusals[stage + 1:ahead + 1])
            marks.extend(before.marks[stage:ahead])
            passes.extend(before.passes[stage:ahead])
            skipped.extend(before.skipped[stage:ahead])
            reads.extend(before.reads[stage:ahead])
            stage = ahead
            continue
        deployment = deployments[stage]
        mine = existing.get(deployment.key, [])
        watch.reads, run.commits = [], []
        watch.commits = run.commits
        revived = None if before is None or differences.affect(run, before, stage) else differences.revived(run, before,
                                                                                                            stage)
        if revived is not None and (not revived or _hopeless(run, deployment, mine, revived)):
            before.charge(run.ledger, stage)
            filled.append(before.filled[stage])
            scheduled.append(before.scheduled[stage])
            if revived:  # the attempts on them: their reads, and the marks they make
                kind = run.kind(deployment)
                made = tuple(sorted({*before.marks[stage], *((kind, position) for position in revived)},
                                    key=lambda mark: mark[1]))
                extra = Reads(((watch.reads, []),))
                refusals.append(before.refusals[stage + 1] | extra.refused)
                marks.append(made)
                passes.append(before.passes[stage] | extra.passed)
                skipped.append(before.skipped[stage] - revived)
                reads.append(Reads(before.reads[stage].parts + extra.parts))
            else:
                refusals.append(before.refusals[stage + 1])
                marks.append(before.marks[stage])
                passes.append(before.passes[stage])
                skipped.append(before.skipped[stage])
                reads.append(before.reads[stage])
            _mark(run, marks[-1])
        else:
            watch.reads = []
            kind = run.kind(deployment)
            dead = run.dead.setdefault(kind, set())
            was = set(dead)
            passed_over: set[int] = set()
            run.ledger.settle()
            fill_deployment(run, deployment, mine, passed_over)
            filled.append(run.commits)
            scheduled.append(len(mine) + len(run.commits))
            read = Reads(((watch.reads, run.commits),))
            refusals.append(read.refused)
            marks.append(tuple((kind, position) for position in sorted(dead - was)))
            passes.append(read.passed)
            skipped.append(frozenset(passed_over))
            reads.append(read)
            if before is not None:
                differences.charged(run.commits, before.filled[stage])
                differences.unmark(before.marks[stage], marks[-1])
        if stop is not None and stop(stage, scheduled[-1]):
            run.ledger.watch = run.commits = None
            return None
        stage += 1
    run.ledger.watch = run.commits = None
    run.ledger.settle()
    return Record(run, previous, capacities, kept, tuple(filled), tuple(scheduled), tuple(refusals), tuple(marks),
                  tuple(passes), tuple(skipped), tuple(reads))


class _Differences:
    """How the pools of a rerun differ from those of the recorded plan at the same stage: raised
    ones, and per pool the pods it holds more (+) or fewer (-) of, by kind of pod (whole-node, or
    shared by the devices each claims).

    A check's answer depends only on the loads and capacities of the pools it read, and only in one
    direction on each: a pool that holds no more pods of any kind (need never shrinks as pods are
    added) and no fewer nodes still admits what it admitted, and a pool that holds no fewer pods
    and no more nodes still refuses what it refused. So a check can answer otherwise only if it
    passed a pool that holds more of some kind of pod now (`fuller`), or stopped at one that has
    more nodes or holds fewer of some kind of pod (`roomier`)."""

    def __init__(self, raised: Iterable[PoolKey]):
        self.raised = frozenset(raised)
        self.delta: dict[PoolKey, dict[Sizes | None, int]] = {}
        self.fuller: set[PoolKey] = set()
        self.roomier: set[PoolKey] = set(self.raised)
        self.unmarked: set[tuple[tuple[int, ...], int]] = set()
        """The dead marks (kind, cluster position) of the record that a stage planned again did
        not make: the only ones the rerun may lack (every other stage makes the record's marks)."""
        self._heap: list[tuple[int, int, int, list[int]]] | None = None
        """`ahead`'s (next stage, order, its place in the list, a suspect's stages); None after
        the suspects changed."""

    def ahead(self, before: Record, stage: int) -> int:
        """The first stage from `stage` on that `affect` or `revived` may find changed (the number
        of stages when none): one that read a `fuller` pool and passed, stopped at a `roomier`
        one, or passed over as dead a cluster of an `unmarked` mark (`Record.readers`). Every
        stage before it places what it placed in `before`. Asked with `stage` never decreasing:
        a heap of each suspect's next stage, built again only after the suspects change (a stage
        planned again), so a visit costs the suspects read there, not all of them (first 49 short
        deployments of 100 x 1,000: a min over every suspect per call cost 8.8 s of 208 s under
        cProfile, as much as the visits it saved; with the heap, 46.6 s -> 44.5 s CPU measured back
        to back, and 12 x 160 3.5-3.6 s -> 3.0-3.2 s, docs/capacity-search.md)."""
        heap = self._heap
        if heap is None:
            readers = before.readers
            heap = self._heap = []
            for suspects, index in ((self.fuller, readers.passed), (self.roomier, readers.refused),
                                    (self.unmarked, readers.skipped)):
                for key in suspects:
                    stages = index.get(key)
                    if stages:
                        at = bisect_left(stages, stage)
                        if at < len(stages):
                            heap.append((stages[at], len(heap), at, stages))
            heapify(heap)
        while heap and heap[0][0] < stage:
            _, order, at, stages = heap[0]
            at = bisect_left(stages, stage, at + 1)
            if at < len(stages):
                heapreplace(heap, (stages[at], order, at, stages))
            else:
                heappop(heap)
        return heap[0][0] if heap else len(before.filled)

    def unmark(self, then: tuple[tuple[tuple[int, ...], int], ...], now: tuple[tuple[tuple[int, ...], int], ...]
               ) -> None:
        """A stage planned again made the marks `now` where the record made `then`."""
        lost = set(then).difference(now)
        if lost:
            self.unmarked |= lost
            self._heap = None

    def affect(self, run: Run, before: Record, stage: int) -> bool:
        """Whether a check of the stage answers otherwise than in `before`: a read of a suspect
        pool (a pool it passed that is `fuller`, or one it stopped at that is `roomier`) asked again
        of the ledger now; every other read gives the same answer (see the class). While every check
        gives the same answer and the walk passes over the same clusters as dead (`revived`), it
        goes the same way. A cluster it tried in `before` that is dead now changes nothing: a mark
        is made only where a replica of its kind can no longer fit, so there the checks it read
        give the same no."""
        suspects = self.fuller & before.passes[stage] if self.fuller else set()
        if self.roomier:
            suspects |= self.roomier & before.refusals[stage + 1]
        if suspects:
            ledger, checks = run.ledger, before.reads[stage].checks
            ledger.settle(suspects)
            if any(ledger.admits(pool, use) != fits for pool in suspects for use, fits in checks[pool]):
                return True
        return False

    def revived(self, run: Run, before: Record, stage: int) -> frozenset[int]:
        """The clusters the stage's walk passed over as dead in `before`, dead before the stage
        there, that are not dead now (those the stage marked itself it marks again, the answers
        being the same)."""
        passed_over = before.skipped[stage]
        if not passed_over:
            return passed_over
        return passed_over - {position for _, position in before.marks[stage]} - run.dead.get(
            run.kind(run.workloads.deployments[stage]), set())

    def charged(self, now: Commits, then: Commits) -> None:
        """A stage planned again charged `now` where the recorded plan charged `then`."""
        if _same(now, then):
            return
        self._heap = None
        touched = set()
        for commits, sign in ((now, 1), (then, -1)):
            for _, charges in commits:
                for pool, use in charges.items():
                    delta = self.delta.setdefault(pool, {})
                    if use.whole:
                        delta[None] = delta.get(None, 0) + sign * use.whole
                    for sizes, pods in use.shared:
                        delta[sizes] = delta.get(sizes, 0) + sign * pods
                    touched.add(pool)
        for pool in touched:
            counts = self.delta[pool].values()
            (self.fuller.add if any(count > 0 for count in counts) else self.fuller.discard)(pool)
            if pool not in self.raised:
                (self.roomier.add if any(count < 0 for count in counts) else self.roomier.discard)(pool)


def _hopeless(run: Run, deployment: ModelDeployment, mine: list[Replica], positions: frozenset[int]) -> bool:
    """Whether the stage's walk, when it comes to each of `positions` (clusters it passed over as
    dead in the recorded plan that are not dead now), finds no room for a replica there and marks
    it dead for the kind (`fill_deployment`'s attempt), as it did in the recorded plan: then it
    places what it placed there. Tried now, at the start of the stage: the stage's replicas land
    elsewhere before the walk comes to a cluster that is dead in the recorded plan, so its pools
    hold then what they hold now. Not when the deployment already has a replica on one of them (the
    walk comes back to those)."""
    run.ledger.settle()
    clusters = run.snapshot.clusters
    held = {replica.cluster for replica in mine}
    for position in sorted(positions):
        cluster = clusters[position]
        if cluster.name in held or run.fit(deployment, cluster) is not None or not run.hopeless(deployment, cluster):
            return False
    return True


def _mark(run: Run, marks: tuple[tuple[tuple[int, ...], int], ...]) -> None:
    """Take over `before`'s dead marks of a stage whose checks gave the same answers in both runs:
    the checks that made them say the same here, and a kind of replica that could not fit a
    cluster never will (loads only grow)."""
    for kind, position in marks:
        run.dead.setdefault(kind, set()).add(position)


def _same(these: Commits, those: Commits) -> bool:
    return len(these) == len(those) and all(
        mine.cluster == theirs.cluster and mine.index == theirs.index and mine.engines == theirs.engines
        and charges == their_charges for (mine, charges), (theirs, their_charges) in zip(these, those, strict=True))
