"""Fill: place each missing replica, one at a time, spreading before packing.

Rule 7: each missing replica goes to the eligible cluster with the fewest replicas of that
deployment (ties by cluster name), skipping clusters with untolerated NoSchedule or NoExecute
taints; within a cluster it takes the lowest free index. Deployments are filled in a stable order
(by namespace/name); a deployment that cannot be fully placed gets as many as fit, and later
deployments still get their turn.
"""

from __future__ import annotations

from collections import Counter

from modelplane.api import ModelDeployment
from modelplane.scheduling.placement import Replica
from modelplane.scheduling.run import Run


def fill(run: Run, kept: list[Replica]) -> list[Replica]:
    by_deployment: dict[str, list[Replica]] = {}
    for replica in kept:
        by_deployment.setdefault(replica.deployment, []).append(replica)
    placed: list[Replica] = []
    for deployment in run.workloads.deployments:
        placed.extend(fill_deployment(run, deployment, by_deployment.get(deployment.key, [])))
    return placed


def fill_deployment(run: Run, deployment: ModelDeployment, existing: list[Replica]) -> list[Replica]:
    eligible = [c for c in run.snapshot.clusters
                if run.ineligible(deployment, c, new=True) is None and run.could_fit(deployment, c)]
    counts = Counter(replica.cluster for replica in existing)
    taken = {(replica.cluster, replica.index) for replica in existing}
    placed: list[Replica] = []
    for _ in range(deployment.spec.replicas - len(existing)):
        for cluster in sorted(eligible, key=lambda c: (counts[c.name], c.name)):
            fit = run.fit(deployment, cluster)
            if fit is not None:
                index = next(i for i in range(len(taken) + 1) if (cluster.name, i) not in taken)
                placed.append(run.commit(deployment, cluster.name, index, fit))
                counts[cluster.name] += 1
                taken.add((cluster.name, index))
                break
        else:
            break  # nothing fits now; capacity only shrinks from here
    return placed
