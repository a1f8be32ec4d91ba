"""Make-before-break across stacks: which replicas each cluster's workload stack runs.

In the split layout (docs/pulumi.md, "Splitting the fleet") the fleet stack places every replica and
each cluster's workload stack applies its share. A replica that moves from cluster A to cluster B is
a new replica `(deployment, B, i)` and the end of `(deployment, A, j)`: B's stack creates the new one
and A's stack must not remove the old one before B's stack has applied it. `handoff(placement,
clusters, applied)` decides, from what each cluster stack reports it has applied (its `applied`
output, read by the fleet stack):

- a cluster runs every replica placed on it;
- a replica its stack has applied that is no longer placed is **draining**: it keeps running while
  its deployment still exists and has a placed replica whose cluster's stack has not applied it
  yet (the replacement is not up); once every placed replica of the deployment is applied, the
  draining ones are dropped (a scale-down drops them at once);
- a cluster whose stack has not reported (`applied` None: not enrolled yet, or never applied)
  counts as having applied nothing, so replicas moving to it keep their old copies;
- a cluster that is no longer in the fleet but whose stack still reports replicas is **stranded**:
  the fleet stack refuses to go on (its cloud cluster would go with the replicas on it).
Pure: no I/O; the same inputs give equal results; clusters and replicas come back sorted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.scheduling.placement import Placement, Replica


@dataclass(frozen=True)
class Handoff:
    running: dict[str, tuple[Replica, ...]]
    """Fleet cluster -> the replicas its stack runs: those placed there, then the draining ones."""
    draining: dict[str, tuple[Replica, ...]]
    """Fleet cluster -> the replicas it keeps until their replacements are applied (empty clusters left out)."""
    stranded: dict[str, tuple[Replica, ...]]
    """Cluster no longer in the fleet -> the replicas its stack still reports."""

    def placement(self, placement: Placement) -> Placement:
        """`placement` with the draining replicas added: what the fleet gateway routes to."""
        extra = tuple(replica for replicas in self.draining.values() for replica in replicas)
        return placement.model_copy(update={"replicas": (*placement.replicas, *extra)})


def handoff(placement: Placement, clusters: Sequence[str],
            applied: Mapping[str, Sequence[Replica] | None]) -> Handoff:
    """Which replicas each cluster stack runs (see the module docstring)."""
    placed = {replica.slot for replica in placement.replicas}
    reported = {cluster: {replica.slot for replica in replicas or ()} for cluster, replicas in applied.items()}
    pending = {replica.deployment for replica in placement.replicas
               if replica.slot not in reported.get(replica.cluster, set())}
    fleet = set(clusters)
    running: dict[str, tuple[Replica, ...]] = {}
    draining: dict[str, tuple[Replica, ...]] = {}
    for cluster in sorted(fleet):
        own = sorted((r for r in placement.replicas if r.cluster == cluster), key=lambda r: r.slot)
        kept = sorted((r for r in applied.get(cluster) or () if r.cluster == cluster and r.slot not in placed
                       and r.deployment in placement.deployments and r.deployment in pending), key=lambda r: r.slot)
        running[cluster] = (*own, *kept)
        if kept:
            draining[cluster] = tuple(kept)
    stranded = {cluster: tuple(sorted(replicas, key=lambda r: r.slot))
                for cluster, replicas in sorted(applied.items()) if cluster not in fleet and replicas}
    return Handoff(running, draining, stranded)
