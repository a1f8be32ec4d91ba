"""Retain and scale down: which previous replicas stay where they are.

Rule 6, Retain: a previous replica stays while its cluster exists, still matches the deployment's (and its
cache's) cluster selector, is not tainted NoExecute (untolerated), and every member's pool still
exists, still matches the current request and still has room for its current cost. It is never
moved to improve the picture. Retained replicas are charged at the cost of the current spec; when a
pool is over capacity (a replica grew, or the pool shrank), the replicas that grew are re-placed
first, then the newest (highest index); the rest stay.

Rule 7, Scale down: scaling down removes from the cluster with the most replicas of the deployment (ties: the
cluster named last, so scale-down mirrors fill, which adds to the name first; upstream Modelplane
does the same), then the highest index. Replicas removed by scale-down are chosen before
capacity is charged, so they never hold nodes another replica needs.
"""

from __future__ import annotations

from typing import NamedTuple

from modelplane.api import Engine, ModelDeployment, Role
from modelplane.scheduling.ledger import PoolKey
from modelplane.scheduling.packing import Use
from modelplane.scheduling.placement import MemberPlacement, Placement, Replica
from modelplane.scheduling.run import EnginePlacements, Fit, Run
from modelplane.scheduling.snapshot import ClusterView


class Candidate(NamedTuple):
    """A previous replica that may stay, priced at the current spec."""

    deployment: ModelDeployment
    cluster: str
    index: int
    fit: Fit
    grown: bool


def retain(run: Run, previous: Placement | None) -> list[Replica]:
    """Charge the replicas that stay, in the order that keeps the oldest; return them.

    A deployment's replicas are checked together, against the clusters that may keep them
    (`Run.eligible`, once per kind of deployment), not the Clusters rule per replica (standard
    1,000 x 10,000 re-place, 51,963 replicas: 1.28 -> 1.23 CPU s, best of 3, pinned)."""
    by_deployment: dict[str, list[Replica]] = {}
    for replica in previous.replicas if previous else ():
        by_deployment.setdefault(replica.deployment, []).append(replica)
    candidates: list[Candidate] = []
    for key in sorted(by_deployment):
        deployment = run.workloads.deployment(key)
        if deployment is None:
            continue
        stays = run.eligible(deployment, new=False)
        clusters = run.snapshot.clusters
        positions = run.snapshot.position
        group = [candidate for replica in by_deployment[key]
                 if (position := positions.get(replica.cluster)) is not None and position in stays
                 and (candidate := _priced(run, deployment, clusters[position], replica)) is not None]
        candidates.extend(scale_down(group, deployment.spec.replicas))
    kept: list[Replica] = []
    for candidate in sorted(candidates, key=lambda c: (c.grown, c.index, c.deployment.key, c.cluster)):
        if run.ledger.fits(candidate.fit.charges):
            kept.append(run.commit(candidate.deployment, candidate.cluster, candidate.index, candidate.fit))
    return kept


def scale_down(group: list[Candidate], replicas: int) -> list[Candidate]:
    """One deployment's candidates, down to `replicas`."""
    for _ in range(len(group) - replicas):
        counts: dict[str, int] = {}
        for candidate in group:
            counts[candidate.cluster] = counts.get(candidate.cluster, 0) + 1
        busiest = max(counts, key=lambda cluster: (counts[cluster], cluster))
        victim = max((c for c in group if c.cluster == busiest), key=lambda c: c.index)
        group.remove(victim)
    return group


def as_candidate(run: Run, replica: Replica) -> Candidate | None:
    """`replica` priced at the current spec, if it may stay (the Retain rule without the ledger); else None."""
    deployment = run.workloads.deployment(replica.deployment)
    cluster = run.snapshot.cluster(replica.cluster)
    if deployment is None or cluster is None or run.ineligible(deployment, cluster, new=False):
        return None
    return _priced(run, deployment, cluster, replica)


def _priced(run: Run, deployment: ModelDeployment, cluster: ClusterView, replica: Replica) -> Candidate | None:
    """`as_candidate` on a cluster that may keep the deployment's replicas."""
    engines: EnginePlacements = {}
    charges: dict[PoolKey, Use] = {}
    grown = False
    for engine in deployment.spec.engines:
        previous = replica.engines.get(engine.name)
        members = _still_fits(engine, previous, cluster, run, charges) if previous is not None else None
        if members is None:
            return None
        engines[engine.name] = members
        grown = grown or any(_grew(previous[role], placed) for role, placed in members.items())
    return Candidate(deployment, cluster.name, replica.index, Fit(engines, charges), grown)


def _grew(before: MemberPlacement, now: MemberPlacement) -> bool:
    """Whether the member now holds more: more whole nodes, more pods than it had nodes and shared
    pods, or more devices per shared pod (a whole node held before holds any one pod now)."""
    if not now.shared_pods:
        return now.nodes > before.nodes
    per_pod = {use.device: use.count for use in before.devices}
    return (now.shared_pods > before.nodes + before.shared_pods
            or (before.shared_pods > 0 and any(use.count > per_pod.get(use.device, 0) for use in now.devices)))


def _still_fits(engine: Engine, previous: dict[Role, MemberPlacement], cluster: ClusterView, run: Run,
                charges: dict[PoolKey, Use]) -> dict[Role, MemberPlacement] | None:
    """Where the engine's members run on their previous pools, if each pool still exists and still
    matches its member, what they put on each added to `charges` (left partly added when None); the
    Engines rule's constraints (something is claimed, a non-claiming member rides with a claiming
    one, one fabric) are checked as for a new placement. A retained engine is not scored: it stays
    whatever pool would win now.

    Each member's placement is taken from `Placements.member` once, not again through
    `Placements.of`, whose memo by engine and pools a retained replica, alone on its pools, almost
    never hits (34,604 entries for 35,375 engines on the varied 1,000 x 10,000 re-place; retain
    1.46 -> 1.33 CPU s there, pinned, one run each)."""
    members: dict[Role, MemberPlacement] = {}
    claiming: set[str] = set()
    riders: list[str] = []
    fabric: str | None = None
    for index, member in enumerate(engine.members):
        before = previous.get(member.role)
        pool = cluster.pool(before.pool) if before is not None else None
        placed = run.placements.member(engine, index, pool) if pool is not None else None
        if pool is None or placed is None or (fabric is not None and pool.fabric != fabric):
            return None
        fabric = pool.fabric
        members[member.role] = placed.placement
        if placed.claims:
            claiming.add(pool.name)
            key = pool.key
            prior = charges.get(key)
            charges[key] = placed.use if prior is None else prior + placed.use
        else:
            riders.append(pool.name)
    if not claiming or any(name not in claiming for name in riders):
        return None
    return members
