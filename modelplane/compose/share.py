"""What one workload cluster's render needs of the fleet's manifests (the split layout's workload stack).

`cluster_share(manifests, cluster, running)` keeps every object but the ModelDeployments that can make
no object on `cluster`: those neither running there (`running`: the keys of the deployments with a
replica there, placed or draining) nor staging their ModelCache there. Invariant (tests/compose/
test_share.py): for a placement holding only replicas on `cluster` of deployments in `running`,
`render(cluster_share(...), placement)` gives `cluster` the same objects and serving stack as
`render(manifests, placement)`. Why each kept kind matters:
- a running deployment: its replicas' objects and the Secrets they read;
- a deployment that references a ModelCache without its own clusterSelector, and whose clusterSelector
  admits the cluster (or is absent): such a cache is staged wherever one of its users may run
  (`cache.staging`), running or not;
- every other kind (clusters, classes, gateway, caches, services, endpoints) is kept: they are few,
  and the serving stack, cache staging and routes read them.
A deployment left out can only change what the fleet gateway renders (its idle routes) and the
warnings, neither of which a workload stack registers.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from modelplane.api import Manifests, ModelDeployment
from modelplane.invariants import present


def cluster_share(manifests: Manifests, cluster: str, running: Collection[str]) -> Manifests:
    """`manifests` without the deployments that make nothing on `cluster` (see the module docstring)."""
    labels = present(manifests.fleet.cluster(cluster), "the share of a fleet cluster").labels
    work = manifests.workloads

    def kept(deployment: ModelDeployment) -> bool:
        if deployment.key in running:
            return True
        used, selector = work.cache_of(deployment), deployment.spec.cluster_selector
        return (used is not None and used.spec.cluster_selector is None
                and (selector is None or selector.matches(labels)))

    deployments = tuple(d for d in work.deployments if kept(d))
    return replace(manifests, workloads=replace(work, deployments=deployments))
