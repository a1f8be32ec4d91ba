"""Capacity suggestions: the smallest capacity changes that place every short deployment.

`suggest(fleet, workloads, previous)` plans the fleet, then takes the short deployments in the
scheduler's order (namespace/name, the order fill serves them). For each, it looks for the best
change on top of the change chosen for the deployments before it (so two short deployments never
count the same free nodes), of two kinds:
- raise the capacity of an existing pool (`pool CLUSTER/POOL nodes=N`);
- add a pool of a published class the cluster has none of yet and its cloud can provision
  (`pool CLUSTER/NEW class=CLASS nodes=N`).
A change counts only when the plan with it places every missing replica of the deployment and
leaves no other deployment with fewer replicas than the plan without it; its node count is the
smallest that does (the count reported is one that was planned, and one node fewer was planned and
failed, so it is the smallest as long as more nodes never place fewer replicas, which the old
exhaustive bisection assumed too). Changes are ranked by added nodes, then added cost per hour
(priced before unpriced), then their edits' text; the best is the one the next deployments build
on, and up to `alternatives` of the best are reported. A deployment no change places is
`unplaceable`, with the reason `explain` gives. With `only`, the search is for the deployments
named; the others are planned as they are. The deployments served before a deployment's turn may
take what a change adds to a pool (a short one grows there, a placed one moves there from a pool
it likes less), so the most nodes a change is planned with is what the deployment's missing
replicas need plus every replica's nodes of each earlier deployment that a check stopped at that
pool or whose walk passed over its cluster as dead (`_Search._taken`). With the first part alone,
the search called 39 of the 50 short deployments of the standard 12 x 160 fleet at 115%
unplaceable; 20 now.

Where to look comes from the scheduler itself, not from a second copy of its rules. The fleet is
planned with an empty pool (0 nodes) of every class a short deployment can claim on added to every
cluster that has none and can provision it; empty pools hold nothing, so the placement is the
fleet's own. `explain`'s diagnosis of that plan lists, per cluster, the pools that stand between the
deployment and one more replica for lack of nodes, with how many nodes they lack (the shortfall):
only the clusters the deployment may run on (clusterSelector, ModelCache, taints and tolerations),
only pools whose class its selectors match, and splits only within a fabric. Those pools are the
candidates; a change anywhere else could help only by moving another deployment out of the way, and
is not looked for; nor is a candidate whose pool an earlier deployment was refused by, when the
deployment's own turn, every turn before it as planned and the pool raised by the most the
deployment may need, places no more of it (`_Search._reaches`: such a change could only work by
moving an earlier deployment out of its way). Each candidate's guess of the nodes it needs is its
shortfall: what one more replica lacks on that pool with every other replica where the plan put it
(the scheduler's own count, sub-node packing included), so a change that places the missing replicas
on that pool needs at least the guess. Further replicas do not each need as much again (with
sub-node packing, eight 1-GPU replicas may share the one node the first lacked), so the guess is not
multiplied by the missing replicas.

Candidates are tried best guess first (their rank as if they needed exactly their guess) and the
search stops when the `alternatives` best changes found rank before the next candidate's guess. Each tried
candidate is planned at its guess and one node fewer (at the most it may need first, while no
change has worked for the deployment: most candidates then fail, and one plan settles it), and
searched further (bisection) only when the guess was wrong, so every reported count is checked by
the scheduler; once the `alternatives` best are found, a candidate is planned with no more nodes
than would still rank it before them (as many nodes as theirs rank after them when its cost or edit
text does), and not at all when its guess ranks after them. Where the guess overstates
what a change needs (it can, when the change works by displacing another deployment's replica
from the pool), a cheaper change may be missed; a suggestion is never wrong.

Each suggestion carries every edit it needs (those chosen for the earlier deployments too), as the
text `plan --what-if` reads, so applying it alone places every deployment it names. A pool is added
only after every pool the changes before it added to the same cluster (`_Search._last_added`): the
search plans the pools it may add in the order of the fleet's classes, `plan --what-if` appends them
in the order of the edits, and pool order is the score's last part, so a pool of an earlier class
added after one of a later class would be planned where it is not applied (this cost 11 of 176
suggestions on 14 generated fleets, where the order never mattered; on a hand-derived fleet in
tests/scheduling/test_capacity.py a suggestion, applied, left its deployment short). Pure and
deterministic: the same inputs give the same suggestions.

Planning a candidate is incremental (`rerun.py`): the fleet with its empty pools is planned once
and recorded, and a candidate is planned again only from the first deployment (in fill order) its
pool refused, and from there only the deployments whose checks may answer otherwise (a pool they
passed holds more pods, a pool they stopped at is raised or holds fewer, a cluster they passed
over as dead is not dead now); every other deployment places what it placed in the record and is
only charged. A candidate whose pool refused nothing, or first refused after the deployment's own
turn, provably cannot place it and is not planned. A candidate's plan stops at the first
deployment left with fewer replicas than in the base plan, or at a target left short. Only the
recorded plan of the changes chosen so far and that of the best candidate of the current
deployment are kept, so memory stays that of about two plans (306 MB on the varied 100 x 1,000
fleet). It is meant for the CLI, not for the Pulumi program: on 100 x 1,000 at 110% it takes
minutes (varied shape) to more than an hour (standard), nearly all of it in candidates that
fail, each planned from its pool's first refusal to the deployment's turn.
docs/capacity-search.md has the figures, what was tried and dropped, and why.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from modelplane.api import Fleet, ModelDeployment, NodePool, Workloads
from modelplane.api.fleet import Pricing
from modelplane.cel import SelectorEvaluator
from modelplane.invariants import present
from modelplane.scheduling.engines import shape_of
from modelplane.scheduling.explanation import Explanation, diagnose
from modelplane.scheduling.fill import fill_deployment
from modelplane.scheduling.ledger import PoolKey
from modelplane.scheduling.scheduler import plan
from modelplane.scheduling.placement import Placement, Replica
from modelplane.scheduling.reasons import Code
from modelplane.scheduling.rerun import Record, record, rerun
from modelplane.scheduling.run import Run
from modelplane.scheduling.whatif import MAX_NODES, AddPool, Edit, SetPoolNodes, provisionable

ALTERNATIVES = 1
"""Changes reported per short deployment by default: the best one."""

Rank = tuple[int, bool, tuple[tuple[str, Decimal], ...], tuple[str, ...]]
Progress = Callable[[int, int], None]


class SearchError(RuntimeError):
    """The search broke one of its own invariants (a bug, not a property of the fleet)."""


class UnknownDeploymentError(LookupError):
    """`only` names a deployment the workloads do not declare (`args[0]`: its key)."""


class EmptyPoolError(SearchError):
    """The empty pools the search adds changed the plan, or explain named a pool the plan lacks."""


@dataclass(frozen=True)
class Suggestion:
    deployments: tuple[str, ...]
    """The deployments it places, the earlier short ones first."""
    edits: tuple[Edit, ...]
    added_nodes: int
    added_cost: dict[str, Decimal] | None
    """Per hour by currency; None when a node it adds has no price."""

    def to_json(self) -> dict[str, Any]:
        cost = None if self.added_cost is None else " + ".join(
            f"{amount} {currency}" for currency, amount in sorted(self.added_cost.items()))
        return {"deployments": list(self.deployments), "edits": [str(e) for e in self.edits],
                "addedNodes": self.added_nodes, "addedCostPerHour": cost}

    @property
    def rank(self) -> Rank:
        cost = self.added_cost
        return (self.added_nodes, cost is None, tuple(sorted((cost or {}).items())), tuple(map(str, self.edits)))


@dataclass(frozen=True)
class Unplaceable:
    deployment: str
    reason: str


@dataclass(frozen=True)
class Suggestions:
    suggestions: tuple[Suggestion, ...]
    """Per short deployment, in the scheduler's order, its best changes best first."""
    unplaceable: tuple[Unplaceable, ...]

    def to_json(self) -> dict[str, Any]:
        return {"suggestions": [s.to_json() for s in self.suggestions],
                "unplaceable": [{"deployment": u.deployment, "reason": u.reason} for u in self.unplaceable]}


@dataclass(frozen=True)
class _Change:
    """One candidate: raise `cluster/pool` from `capacity`, or add it as a pool of `new_class`;
    `guess` is the nodes it needs at least if the missing replicas land on that pool."""

    cluster: str
    pool: str
    new_class: str | None
    capacity: int
    pricing: Pricing | None
    guess: int

    @property
    def key(self) -> PoolKey:
        return self.cluster, self.pool

    def edit(self, nodes: int) -> Edit:
        if self.new_class is None:
            return SetPoolNodes(self.cluster, self.pool, self.capacity + nodes)
        return AddPool(self.cluster, self.pool, self.new_class, nodes)


def suggest(fleet: Fleet, workloads: Workloads, previous: Placement | None = None, *,
            alternatives: int | None = ALTERNATIVES, progress: Progress | None = None,
            only: Collection[str] | None = None) -> Suggestions:
    """Per short deployment, its `alternatives` best changes (every working one when None);
    `progress(done, short)` is called after each short deployment. `only`: the keys of the
    deployments to search for (every short one when None); each builds on the changes chosen for
    those of them before it, and the others are planned as they are, short or not, so a suggestion
    holds as it does without `only` (an `UnknownDeploymentError` names a key not declared)."""
    if only is not None:
        unknown = sorted(set(only) - {d.key for d in workloads.deployments})
        if unknown:
            raise UnknownDeploymentError(unknown[0])
    search = _Search(fleet, workloads, previous, only)
    chosen: list[Suggestion] = []
    found: list[Suggestion] = []
    unplaceable: list[Unplaceable] = []
    short = search.searched
    for done, deployment in enumerate(short, 1):
        status = search.base.deployments[deployment.key]
        before = chosen[-1] if chosen else Suggestion((), (), 0, {})
        ranked = search.best(deployment, before, alternatives)
        if not ranked:
            reason = status.reasons[0] if status.reasons else "no change places it"
            unplaceable.append(Unplaceable(deployment.key, reason))
        else:
            found.extend(ranked)
            chosen.append(ranked[0])
            search.keep(ranked[0])
        if progress is not None:
            progress(done, len(short))
    return Suggestions(tuple(found), tuple(unplaceable))


class _Search:
    """One `suggest` call: the base plan, and the recorded plan (`rerun.Record`) of the fleet with
    its empty pools and the changes chosen so far, against which each candidate is planned again
    from the first stage it can change."""

    def __init__(self, fleet: Fleet, workloads: Workloads, previous: Placement | None,
                 only: Collection[str] | None):
        evaluator = SelectorEvaluator()
        self.base, run = plan(fleet, workloads, previous, evaluator=evaluator)
        deployments = workloads.deployments
        self.searched = [d for d in deployments
                         if self.base.deployments[d.key].short and (only is None or d.key in only)]
        """The short deployments to search for, in the scheduler's order."""
        claimed = _claimed_classes(run, self.searched)
        hypothetical, self.empty = _with_empty_pools(fleet, claimed)
        self.reference = record(Run(hypothetical, workloads, evaluator), previous)
        self.floor = tuple(self.base.deployments[d.key].scheduled for d in deployments)
        if self.reference.scheduled != self.floor:
            raise EmptyPoolError("empty pools changed the placement; capacity suggestions would not hold")
        self.stage = {d.key: stage for stage, d in enumerate(deployments)}
        self._demand = [_replica_nodes(d) * d.spec.replicas for d in deployments]
        """Per stage, the most nodes its deployment's replicas hold."""
        self._best: tuple[Rank, Record] | None = None

    def keep(self, chosen: Suggestion) -> None:
        """Plan the next deployment on top of `chosen` (the best of the last one)."""
        if self._best is not None:
            rank, planned = self._best
            if rank != chosen.rank:
                raise SearchError(f"the plan kept is not that of the best change ({', '.join(map(str, chosen.edits))})")
            self.reference = planned
        self._best = None

    def best(self, deployment: ModelDeployment, before: Suggestion, alternatives: int | None) -> list[Suggestion]:
        targets = (*before.deployments, deployment.key)
        reference, stage = self.reference, self.stage[deployment.key]
        missing = deployment.spec.replicas - reference.scheduled[stage]
        if missing <= 0:  # the changes for the deployments before place it too
            return [Suggestion(targets, before.edits, before.added_nodes, before.added_cost)]
        changes = []
        for change in self._changes(diagnose(reference.run, deployment, {})):
            start = reference.start([change.key])
            if start is not None and start <= stage:  # else the plan is the same up to the deployment
                changes.append((change, start))
        changes.sort(key=lambda entry: _suggestion(before, targets, entry[0], entry[0].guess).rank)
        stages = frozenset(self.stage[key] for key in targets)
        kept = [replica for replica, _ in reference.kept if replica.deployment == deployment.key]
        found: list[Suggestion] = []
        for change, start in changes:
            guess = _suggestion(before, targets, change, change.guess)
            if alternatives is not None and len(found) >= alternatives and found[alternatives - 1].rank <= guess.rank:
                break
            most = min(MAX_NODES - change.capacity, _replica_nodes(deployment) * missing + self._taken(change, stage))
            if alternatives is not None and len(found) >= alternatives:  # more nodes than those would rank after them
                worst = found[alternatives - 1]
                most = min(most, worst.added_nodes - before.added_nodes)
                if _suggestion(before, targets, change, most).rank > worst.rank:
                    most -= 1  # as many nodes as theirs rank after them too (by cost, or by the edit's text)
            if start < stage and not self._reaches(change, deployment, kept, stage, most):
                continue  # (from the deployment's own turn, planning the change costs what the check does)
            fewest = self._fewest(change, start, stages, most, not found)
            if fewest is not None:
                nodes, planned = fewest
                suggestion = _suggestion(before, targets, change, nodes)
                bisect.insort(found, suggestion, key=lambda s: s.rank)
                if self._best is None or suggestion.rank < self._best[0]:
                    self._best = (suggestion.rank, planned)
        return found if alternatives is None else found[:alternatives]

    def _taken(self, change: _Change, stage: int) -> int:
        """The most nodes the deployments served before `stage` may take of the change's pool when it
        is raised: all their replicas' for those a check stopped at (a short one grows there, a
        placed one may move there) and those whose walk passed over its cluster as dead (raised, it
        is not dead). Others reach the pool only by moving into room a move left elsewhere, which is
        not looked for (module docstring)."""
        index = self.reference.readers
        position = self.reference.run.snapshot.position[change.cluster]
        readers = {before for before in index.refused.get(change.key, ()) if before < stage}
        readers.update(before for before in index.dead.get(position, ()) if before < stage)
        return sum(self._demand[before] for before in readers)

    def _fewest(self, change: _Change, start: int, targets: frozenset[int], most: int, first: bool
                ) -> tuple[int, Record] | None:
        """The fewest added nodes (1..most) with which the targets are placed, tried at the guess
        and one fewer first (at `most` before them while no change has worked, the `first`), and the
        plan with them; None if even `most` fail."""
        plans: dict[int, Record | None] = {}

        def works(nodes: int) -> bool:
            if nodes not in plans:
                plans[nodes] = self._works(change, nodes, start, targets)
            return plans[nodes] is not None

        if most < 1:
            return None
        guess = min(change.guess, most)
        if first and guess < most and not works(most):
            return None  # no change has worked yet, and most candidates then fail: one plan settles it
        if works(guess):
            if guess == 1 or not works(guess - 1):
                return guess, plans[guess]  # type: ignore[return-value]
            low, high = 1, guess - 1  # the guess was too high: works(high)
        elif guess < most and works(most):
            low, high = guess + 1, most
        else:
            return None
        while low < high:
            middle = (low + high) // 2
            if works(middle):
                high = middle
            else:
                low = middle + 1
        return high, plans[high]  # type: ignore[return-value]

    def _reaches(self, change: _Change, deployment: ModelDeployment, kept: list[Replica], stage: int,
                 nodes: int) -> bool:
        """Whether the deployment's own turn (`stage`; `kept`: its replicas retain kept), with every
        turn before it as recorded and `change` adding `nodes`, places more of it than the record: else
        the change could help it only by moving an earlier deployment out of its way, which is not
        looked for (module docstring). One fill of one deployment on a checkpoint of the record's
        ledger, against a plan of every turn from the change's start: on the first 60 short deployments
        of the standard 100 x 1,000 fleet at 110% it ruled out 1,729 of 3,467 candidates, which took 70
        of the search's 125 CPU s (instrumented), and none of the 22 that worked; those 60 took 117.7
        CPU s before, 54-57 s after. Asked only of a change that starts before the deployment's turn:
        from its turn on, planning the change costs what this does. It gives up changes that work only
        by such a move (tests/scheduling/test_capacity.py has one hypothesis found)."""
        reference = self.reference
        ledger = reference.ledger_before(stage, {**reference.capacities, change.key: change.capacity + nodes})
        ledger.settle()
        placed = fill_deployment(reference.run.fork(ledger), deployment, kept)
        return len(kept) + len(placed) > reference.scheduled[stage]

    def _works(self, change: _Change, nodes: int, start: int, targets: frozenset[int]) -> Record | None:
        """The plan with `change` adding `nodes`, if every target is fully placed in it and no
        deployment has fewer replicas than in the base plan (it stops at the first that does)."""
        deployments = self.reference.run.workloads.deployments

        def stop(stage: int, scheduled: int) -> bool:
            return scheduled < self.floor[stage] or (stage in targets and scheduled < deployments[stage].spec.replicas)

        capacities = {**self.reference.capacities, change.key: change.capacity + nodes}
        return rerun(self.reference, capacities, start, stop)

    def _changes(self, explanation: Explanation) -> list[_Change]:
        """A change per pool that lacks nodes for one more replica (an empty pool not added yet
        becomes a new pool). Its guess is the smallest shortfall explain gave it (at least 1): the
        first missing replica needs that much more of the pool."""
        shortfalls: dict[PoolKey, int] = {}
        for verdict in explanation.clusters:
            for reason in verdict.reasons:
                if reason.code is Code.INSUFFICIENT_NODES and reason.pool is not None:
                    key = (reason.cluster, reason.pool)
                    shortfalls[key] = min(shortfalls.get(key, reason.shortfall), reason.shortfall)
        run = self.reference.run
        added = self._last_added()
        changes = []
        for key, shortfall in sorted(shortfalls.items()):
            cluster = run.snapshot.cluster(key[0])
            pool = cluster.pool(key[1]) if cluster is not None else None
            if pool is None:
                raise EmptyPoolError(f"explain named pool {key[0]}/{key[1]}, which the fleet it planned lacks")
            new = key in self.empty and key not in self.reference.capacities
            if new and pool.order < added.get(key[0], -1):
                continue  # applied, it would come after a pool added before it, not where it was planned
            changes.append(_Change(key[0], key[1], pool.class_name if new else None, run.ledger.capacity(key),
                                   pool.pricing, max(shortfall, 1)))
        return changes

    def _last_added(self) -> dict[str, int]:
        """Per cluster, the place in its pool list of the last pool the changes chosen so far add: a
        new pool before it would be planned where `plan --what-if` does not put it (module docstring)."""
        run = self.reference.run
        last: dict[str, int] = {}
        for cluster_name, pool_name in self.empty & self.reference.capacities.keys():
            cluster = present(run.snapshot.cluster(cluster_name), "a cluster the search added a pool to")
            pool = present(cluster.pool(pool_name), "a pool the search added")
            last[cluster_name] = max(last.get(cluster_name, -1), pool.order)
        return last


def _claimed_classes(run: Run, deployments: Iterable[ModelDeployment]) -> frozenset[str]:
    """The classes on which some member of the deployments can claim a device."""
    return frozenset().union(*(claims for deployment in deployments for engine in deployment.spec.engines
                               for claims in shape_of(engine, run.matcher, run.snapshot).claims))


def _with_empty_pools(fleet: Fleet, classes: frozenset[str]) -> tuple[Fleet, frozenset[PoolKey]]:
    """Every cluster with a pool of 0 nodes of each of `classes` it has none of and can provision,
    and those pools."""
    clusters = []
    empty: set[PoolKey] = set()
    for cluster in fleet.clusters:
        pools = list(cluster.spec.node_pools)
        present = {pool.class_name for pool in pools}
        for klass in fleet.classes:
            if klass.name in classes and klass.name not in present and provisionable(cluster, klass):
                pools.append(NodePool(name=_new_pool_name(pools, klass.name), class_name=klass.name, node_count=0))
                empty.add((cluster.name, pools[-1].name))
        added = len(pools) > len(cluster.spec.node_pools)
        spec = cluster.spec.model_copy(update={"node_pools": tuple(pools)})
        clusters.append(cluster.model_copy(update={"spec": spec}) if added else cluster)
    return dataclasses.replace(fleet, clusters=tuple(clusters)), frozenset(empty)


def _suggestion(before: Suggestion, targets: tuple[str, ...], change: _Change, nodes: int) -> Suggestion:
    cost: dict[str, Decimal] | None = None
    if before.added_cost is not None and change.pricing is not None:
        cost = dict(before.added_cost)
        currency = change.pricing.currency
        cost[currency] = cost.get(currency, Decimal(0)) + change.pricing.amount * nodes
    return Suggestion(targets, (*before.edits, change.edit(nodes)), before.added_nodes + nodes, cost)


def _replica_nodes(deployment: ModelDeployment) -> int:
    """At most what one replica costs in nodes: every member's pods x copies (a member that claims
    nothing, or pods that share nodes, cost less)."""
    return sum(member.pods * engine.copies for engine in deployment.spec.engines for member in engine.members)


def _new_pool_name(pools: list[NodePool], class_name: str) -> str:
    """A pool name (a DNS label of at most 40 characters) from the class's, unused among `pools`."""
    base = re.sub(r"[^a-z0-9-]", "-", class_name)[:37].strip("-")
    taken = {pool.name for pool in pools}
    return next(name for name in (base, *(f"{base}-{n}" for n in range(2, 100))) if name not in taken)
