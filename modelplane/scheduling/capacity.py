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
`unplaceable`, with the reason `explain` gives.

Where to look comes from the scheduler itself, not from a second copy of its rules. The fleet is
planned with an empty pool (0 nodes) of every class a short deployment can claim on added to every
cluster that has none and can provision it; empty pools hold nothing, so the placement is the
fleet's own. `explain`'s diagnosis of that plan lists, per cluster, the pools that stand between
the deployment and one more replica for lack of nodes, with how many nodes they lack (the
shortfall): only the clusters the deployment may run on (clusterSelector, ModelCache, taints and
tolerations), only pools whose class its selectors match, and splits only within a fabric. Those
pools are the candidates; a change anywhere else could help only by moving another deployment out
of the way, and is not looked for. Each candidate's guess of the nodes it needs is its shortfall:
what one more replica lacks on that pool with every other replica where the plan put it (the
scheduler's own count, sub-node packing included), so a change that places the missing replicas on
that pool needs at least the guess. Further replicas do not each need as much again (with sub-node
packing, eight 1-GPU replicas may share the one node the first lacked), so the guess is not
multiplied by the missing replicas.

Candidates are tried best guess first (their rank as if they needed exactly their guess) and the
search stops when the `alternatives` best changes found rank before the next candidate's guess. Each tried
candidate is planned at its guess and one node fewer, and searched further (bisection) only when
the guess was wrong, so every reported count is checked by `place()`. Where the guess overstates
what a change needs (it can, when the change works by displacing another deployment's replica
from the pool), a cheaper change may be missed; a suggestion is never wrong.

Each suggestion carries every edit it needs (those chosen for the earlier deployments too), as the
text `plan --what-if` reads, so applying it alone places every deployment it names. Pure and
deterministic: the same inputs give the same suggestions. It plans the fleet a few times per short
deployment that a change can place, so it is meant for the CLI, not for the Pulumi program.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from modelplane.api import Fleet, ModelDeployment, NodePool, Workloads
from modelplane.api.fleet import Pricing
from modelplane.cel import SelectorEvaluator
from modelplane.invariants import present
from modelplane.scheduling.engines import shape_of
from modelplane.scheduling.explanation import Explanation, diagnose
from modelplane.scheduling.scheduler import plan
from modelplane.scheduling.placement import Placement
from modelplane.scheduling.reasons import Code
from modelplane.scheduling.run import Run
from modelplane.scheduling.whatif import MAX_NODES, AddPool, Edit, SetPoolNodes, apply_edits, provisionable

ALTERNATIVES = 1
"""Changes reported per short deployment by default: the best one."""

Rank = tuple[int, bool, tuple[tuple[str, Decimal], ...], tuple[str, ...]]


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

    def edit(self, nodes: int) -> Edit:
        if self.new_class is None:
            return SetPoolNodes(self.cluster, self.pool, self.capacity + nodes)
        return AddPool(self.cluster, self.pool, self.new_class, nodes)


def suggest(fleet: Fleet, workloads: Workloads, previous: Placement | None = None, *,
            alternatives: int | None = ALTERNATIVES) -> Suggestions:
    """Per short deployment, its `alternatives` best changes (every working one when None)."""
    search = _Search(fleet, workloads, previous)
    chosen: list[Suggestion] = []
    found: list[Suggestion] = []
    unplaceable: list[Unplaceable] = []
    for deployment in workloads.deployments:
        status = search.base.deployments[deployment.key]
        if not status.short:
            continue
        before = chosen[-1] if chosen else Suggestion((), (), 0, {})
        ranked = search.best(deployment, before, alternatives)
        if not ranked:
            reason = status.reasons[0] if status.reasons else "no change places it"
            unplaceable.append(Unplaceable(deployment.key, reason))
            continue
        found.extend(ranked)
        chosen.append(ranked[0])
        search.keep(ranked[0].edits)
    return Suggestions(tuple(found), tuple(unplaceable))


class _Search:
    """The plans of one `suggest` call, each of the fleet with its empty pools added, memoized by
    edits (a deployment's candidates share the plan of the edits chosen before it)."""

    def __init__(self, fleet: Fleet, workloads: Workloads, previous: Placement | None):
        self.fleet = fleet
        self.workloads = workloads
        self.previous = previous
        self.evaluator = SelectorEvaluator()
        self.base, run = plan(fleet, workloads, previous, evaluator=self.evaluator)
        self.claimed = _claimed_classes(run, (d for d in workloads.deployments if self.base.deployments[d.key].short))
        self._plans: dict[tuple[Edit, ...], tuple[Fleet, Fleet, Placement, Run]] = {}

    def keep(self, edits: tuple[Edit, ...]) -> None:
        """Forget every plan but that of `edits` (the next deployment builds on it)."""
        self._plans = {edits: self._plans[edits]} if edits in self._plans else {}

    def best(self, deployment: ModelDeployment, before: Suggestion, alternatives: int | None) -> list[Suggestion]:
        targets = (*before.deployments, deployment.key)
        if before.edits and self._works(targets, before.edits):
            return [Suggestion(targets, before.edits, before.added_nodes, before.added_cost)]
        edited, hypothetical, placement, run = self._plan(before.edits)
        missing = deployment.spec.replicas - placement.deployments[deployment.key].scheduled
        changes = _changes(edited, hypothetical, diagnose(run, deployment, {}))
        changes.sort(key=lambda change: _suggestion(before, targets, change, change.guess).rank)
        found: list[Suggestion] = []
        for change in changes:
            guess = _suggestion(before, targets, change, change.guess)
            if alternatives is not None and len(found) >= alternatives and found[alternatives - 1].rank <= guess.rank:
                break
            most = min(MAX_NODES - change.capacity, _replica_nodes(deployment) * missing)
            nodes = self._fewest(change, targets, before.edits, most)
            if nodes is not None:
                bisect.insort(found, _suggestion(before, targets, change, nodes), key=lambda s: s.rank)
        return found if alternatives is None else found[:alternatives]

    def _fewest(self, change: _Change, targets: tuple[str, ...], edits: tuple[Edit, ...], most: int) -> int | None:
        """The fewest added nodes (1..most) with which the targets are placed, tried at the guess
        and one fewer first; None if even `most` fail."""

        def works(nodes: int) -> bool:
            return self._works(targets, (*edits, change.edit(nodes)))

        if most < 1:
            return None
        guess = min(change.guess, most)
        if works(guess):
            if guess == 1 or not works(guess - 1):
                return guess
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
        return high

    def _works(self, targets: tuple[str, ...], edits: tuple[Edit, ...]) -> bool:
        """With `edits`, every target is fully placed and no deployment has fewer replicas than in the base plan."""
        after = self._plan(edits)[2]
        return (all(not after.deployments[target].short for target in targets)
                and all(after.deployments[key].scheduled >= status.scheduled
                        for key, status in self.base.deployments.items()))

    def _plan(self, edits: tuple[Edit, ...]) -> tuple[Fleet, Fleet, Placement, Run]:
        """The fleet with `edits` applied, the same with its empty pools, and the plan of the latter."""
        found = self._plans.get(edits)
        if found is None:
            edited, workloads = apply_edits(self.fleet, self.workloads, edits)
            hypothetical = _with_empty_pools(edited, self.claimed)
            placement, run = plan(hypothetical, workloads, self.previous, evaluator=self.evaluator)
            found = self._plans[edits] = (edited, hypothetical, placement, run)
        return found


def _claimed_classes(run: Run, deployments: Iterable[ModelDeployment]) -> frozenset[str]:
    """The classes on which some member of the deployments can claim a device."""
    classes = run.snapshot.classes
    return frozenset().union(*(claims for deployment in deployments for engine in deployment.spec.engines
                               for claims in shape_of(engine, run.matcher, classes).claims))


def _with_empty_pools(fleet: Fleet, classes: frozenset[str]) -> Fleet:
    """Every cluster with a pool of 0 nodes of each of `classes` it has none of and can provision."""
    clusters = []
    for cluster in fleet.clusters:
        pools = list(cluster.spec.node_pools)
        present = {pool.class_name for pool in pools}
        for klass in fleet.classes:
            if klass.name in classes and klass.name not in present and provisionable(cluster, klass):
                pools.append(NodePool(name=_new_pool_name(pools, klass.name), class_name=klass.name, node_count=0))
        added = len(pools) > len(cluster.spec.node_pools)
        spec = cluster.spec.model_copy(update={"node_pools": tuple(pools)})
        clusters.append(cluster.model_copy(update={"spec": spec}) if added else cluster)
    return dataclasses.replace(fleet, clusters=tuple(clusters))


def _changes(edited: Fleet, hypothetical: Fleet, explanation: Explanation) -> list[_Change]:
    """A change per pool that lacks nodes for one more replica (an empty pool's becomes a new pool).
    Its guess is the smallest shortfall explain gave it (at least 1): the first missing replica needs
    that much more of the pool."""
    shortfalls: dict[tuple[str, str], int] = {}
    for verdict in explanation.clusters:
        for reason in verdict.reasons:
            if reason.code is Code.INSUFFICIENT_NODES and reason.pool is not None:
                key = (reason.cluster, reason.pool)
                shortfalls[key] = min(shortfalls.get(key, reason.shortfall), reason.shortfall)
    changes = []
    for (cluster_name, pool_name), shortfall in sorted(shortfalls.items()):
        cluster = present(edited.cluster(cluster_name), f"a short pool's cluster {cluster_name} is on the edited fleet")
        pool = cluster.pool(pool_name)
        if pool is not None:
            klass = edited.inference_class(pool.class_name)
            changes.append(_Change(cluster_name, pool_name, None, pool.capacity, klass.spec.pricing if klass else None,
                                   max(shortfall, 1)))
            continue
        with_empty = hypothetical.cluster(cluster_name)
        empty = present(with_empty.pool(pool_name) if with_empty else None,
                        f"pool {cluster_name}/{pool_name}, which explain names, is on the fleet it planned")
        klass = edited.inference_class(empty.class_name)
        changes.append(_Change(cluster_name, pool_name, empty.class_name, 0, klass.spec.pricing if klass else None,
                               max(shortfall, 1)))
    return changes


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
