"""Capacity suggestions: the smallest capacity changes that place every short deployment.

`suggest(fleet, workloads, previous)` plans the fleet, then takes the short deployments in the
scheduler's order (namespace/name, the order fill serves them). For each, it tries every candidate
change against `place()` itself, on top of the best change chosen for the deployments before it
(so two short deployments never count the same free nodes):
- raise the capacity of an existing pool (`pool CLUSTER/POOL nodes=N`);
- add a pool of a published class the cluster has none of yet and its cloud can provision
  (`pool CLUSTER/NEW class=CLASS nodes=N`).
A candidate counts only when the plan with it places every missing replica of the deployment and
leaves no other deployment with fewer replicas than the plan without it; its node count is the
smallest that does (found by bisection, and the count reported is one that was planned).
Candidates are ranked by added nodes, then added cost per hour (priced before unpriced), then
their edits' text; the first is the one the next deployments build on. A deployment no candidate
places is `unplaceable`, with the reason `explain` gives.

Each suggestion carries every edit it needs (those chosen for the earlier deployments too), as the
text `plan --what-if` reads, so applying it alone places every deployment it names. Pure and
deterministic: the same inputs give the same suggestions. It plans many times, so it is meant for
the CLI, not for the Pulumi program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from modelplane.api import Fleet, InferenceCluster, ModelDeployment, Workloads
from modelplane.api.fleet import Pricing
from modelplane.scheduling.place import place
from modelplane.scheduling.placement import Placement
from modelplane.scheduling.whatif import MAX_NODES, AddPool, Edit, SetPoolNodes, apply_edits, provisionable


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
    def rank(self) -> tuple[int, bool, tuple[tuple[str, Decimal], ...], tuple[str, ...]]:
        cost = self.added_cost
        return (self.added_nodes, cost is None, tuple(sorted((cost or {}).items())), tuple(map(str, self.edits)))


@dataclass(frozen=True)
class Unplaceable:
    deployment: str
    reason: str


@dataclass(frozen=True)
class Suggestions:
    suggestions: tuple[Suggestion, ...]
    """Per short deployment, in the scheduler's order, its candidates best first."""
    unplaceable: tuple[Unplaceable, ...]

    def to_json(self) -> dict[str, Any]:
        return {"suggestions": [s.to_json() for s in self.suggestions],
                "unplaceable": [{"deployment": u.deployment, "reason": u.reason} for u in self.unplaceable]}


@dataclass(frozen=True)
class _Change:
    """One candidate: raise `cluster/pool` from `capacity`, or add it as a pool of `new_class`."""

    cluster: str
    pool: str
    new_class: str | None
    capacity: int
    pricing: Pricing | None

    def edit(self, nodes: int) -> Edit:
        if self.new_class is None:
            return SetPoolNodes(self.cluster, self.pool, self.capacity + nodes)
        return AddPool(self.cluster, self.pool, self.new_class, nodes)


def suggest(fleet: Fleet, workloads: Workloads, previous: Placement | None = None) -> Suggestions:
    base = place(fleet, workloads, previous)
    chosen: list[Suggestion] = []
    found: list[Suggestion] = []
    unplaceable: list[Unplaceable] = []
    for deployment in workloads.deployments:
        status = base.deployments[deployment.key]
        if not status.short:
            continue
        before = chosen[-1] if chosen else Suggestion((), (), 0, {})
        ranked = sorted(_candidates(fleet, workloads, previous, base, deployment, before), key=lambda s: s.rank)
        if not ranked:
            unplaceable.append(Unplaceable(deployment.key, status.reasons[0] if status.reasons else "no change places it"))
            continue
        found.extend(ranked)
        chosen.append(ranked[0])
    return Suggestions(tuple(found), tuple(unplaceable))


def _candidates(fleet: Fleet, workloads: Workloads, previous: Placement | None, base: Placement,
                deployment: ModelDeployment, before: Suggestion) -> list[Suggestion]:
    targets = (*before.deployments, deployment.key)
    if before.edits and _works(fleet, workloads, previous, base, targets, before.edits):
        return [Suggestion(targets, before.edits, before.added_nodes, before.added_cost)]
    edited, _ = apply_edits(fleet, workloads, before.edits)
    missing = deployment.spec.replicas - base.deployments[deployment.key].scheduled
    out = []
    for change in _changes(edited):
        most = min(MAX_NODES - change.capacity, _replica_nodes(deployment) * missing)
        nodes = _fewest_nodes(change, fleet, workloads, previous, base, targets, before.edits, most)
        if nodes is not None:
            out.append(_suggestion(before, targets, change, nodes))
    return out


def _changes(fleet: Fleet) -> list[_Change]:
    """Every pool raised, and every class the cluster has no pool of yet and its cloud can provision
    added as a new pool."""
    changes = []
    for cluster in fleet.clusters:
        for pool in cluster.spec.node_pools:
            klass = fleet.inference_class(pool.class_name)
            changes.append(_Change(cluster.name, pool.name, None, pool.capacity, klass.spec.pricing if klass else None))
        present = {pool.class_name for pool in cluster.spec.node_pools}  # raising that pool is the same hardware
        changes += [_Change(cluster.name, _new_pool_name(cluster, klass.name), klass.name, 0, klass.spec.pricing)
                    for klass in fleet.classes if klass.name not in present and provisionable(cluster, klass)]
    return changes


def _fewest_nodes(change: _Change, fleet: Fleet, workloads: Workloads, previous: Placement | None, base: Placement,
                  targets: tuple[str, ...], edits: tuple[Edit, ...], most: int) -> int | None:
    """The fewest added nodes (1..most) with which the targets are placed; None if even `most` fail."""

    def works(nodes: int) -> bool:
        return _works(fleet, workloads, previous, base, targets, (*edits, change.edit(nodes)))

    if most < 1 or not works(most):
        return None
    low, high = 1, most  # works(high): bisect for the smallest that works
    while low < high:
        middle = (low + high) // 2
        if works(middle):
            high = middle
        else:
            low = middle + 1
    return high


def _works(fleet: Fleet, workloads: Workloads, previous: Placement | None, base: Placement, targets: tuple[str, ...],
           edits: tuple[Edit, ...]) -> bool:
    """With `edits`, every target is fully placed and no deployment has fewer replicas than in `base`."""
    after = place(*apply_edits(fleet, workloads, edits), previous)
    return (all(not after.deployments[target].short for target in targets)
            and all(after.deployments[key].scheduled >= status.scheduled for key, status in base.deployments.items()))


def _suggestion(before: Suggestion, targets: tuple[str, ...], change: _Change, nodes: int) -> Suggestion:
    cost: dict[str, Decimal] | None = None
    if before.added_cost is not None and change.pricing is not None:
        cost = dict(before.added_cost)
        currency = change.pricing.currency
        cost[currency] = cost.get(currency, Decimal(0)) + change.pricing.amount * nodes
    return Suggestion(targets, (*before.edits, change.edit(nodes)), before.added_nodes + nodes, cost)


def _replica_nodes(deployment: ModelDeployment) -> int:
    """At most what one replica costs in nodes: every member's pods x copies (a member that claims
    nothing costs less)."""
    return sum(member.pods * engine.copies for engine in deployment.spec.engines for member in engine.members)


def _new_pool_name(cluster: InferenceCluster, class_name: str) -> str:
    """A pool name (a DNS label of at most 40 characters) from the class's, unused on the cluster."""
    base = re.sub(r"[^a-z0-9-]", "-", class_name)[:37].strip("-")
    taken = {pool.name for pool in cluster.spec.node_pools}
    return next(name for name in (base, *(f"{base}-{n}" for n in range(2, 100))) if name not in taken)
