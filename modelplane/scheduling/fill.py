"""Fill: place each missing replica, one at a time, spreading before packing.

Rule 7: each missing replica goes to the eligible cluster with the fewest replicas of that
deployment (ties by cluster name), skipping clusters with untolerated NoSchedule or NoExecute
taints; within a cluster it takes the lowest free index. Deployments are filled in a stable order
(by namespace/name); a deployment that cannot be fully placed gets as many as fit, and later
deployments still get their turn.
"""

from __future__ import annotations

from bisect import insort
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
    if len(existing) >= deployment.spec.replicas:
        return []
    eligible = [c for c in run.snapshot.clusters
                if run.ineligible(deployment, c, new=True) is None and run.could_fit(deployment, c)]
    counts = Counter(replica.cluster for replica in existing)
    taken = {(replica.cluster, replica.index) for replica in existing}
    order = sorted((counts[c.name], c.name, position) for position, c in enumerate(eligible))
    placed: list[Replica] = []
    for _ in range(deployment.spec.replicas - len(existing)):
        for rank, (count, name, position) in enumerate(order):
            fit = run.fit(deployment, eligible[position])
            if fit is not None:
                index = next(i for i in range(len(taken) + 1) if (name, i) not in taken)
                placed.append(run.commit(deployment, name, index, fit))
                taken.add((name, index))
                del order[rank]
                insort(order, (count + 1, name, position))
                break
        else:
            break  # nothing fits now; capacity only shrinks from here
    return placed
