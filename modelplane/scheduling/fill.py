"""Fill: place each missing replica, one at a time, spreading before packing.

Rule 8, Fill: each missing replica goes to the eligible cluster with the fewest replicas of that
deployment (ties by cluster name), skipping clusters with untolerated NoSchedule or NoExecute
taints; within a cluster it takes the lowest free index. Deployments are filled in a stable order
(by namespace/name); a deployment that cannot be fully placed gets as many as fit, and later
deployments still get their turn.

Cost grows with replicas, not with clusters x deployments: a deployment tries only its candidate
clusters (run.py), and a cluster where its kind of replica can never fit again (free nodes only
shrink) is marked dead for every deployment of that kind, so it is tried at most once per kind.
The order in which clusters are tried is exactly the Fill rule's: clusters with fewer replicas of the
deployment first, by name; the walk over the clusters that still have none resumes where the last
replica was placed, since every cluster before that point was placed on, is dead, or is kept for
another try (`retry`).

`fill_deployment` may note in `skipped` the cluster positions its walk passed over as dead: with the
pools its checks read (the ledger's `Watch`), all a deployment's placement depends on (`rerun.py`).
"""

from __future__ import annotations

from bisect import insort
from collections import Counter

from modelplane.api import ModelDeployment
from modelplane.scheduling.placement import Replica
from modelplane.scheduling.run import Fit, Run


def fill(run: Run, kept: list[Replica]) -> list[Replica]:
    by_deployment: dict[str, list[Replica]] = {}
    for replica in kept:
        by_deployment.setdefault(replica.deployment, []).append(replica)
    placed: list[Replica] = []
    for deployment in run.workloads.deployments:
        placed.extend(fill_deployment(run, deployment, by_deployment.get(deployment.key, [])))
    return placed


def fill_deployment(run: Run, deployment: ModelDeployment, existing: list[Replica],
                    skipped: set[int] | None = None) -> list[Replica]:
    missing = deployment.spec.replicas - len(existing)
    if missing <= 0:
        return []
    clusters = run.snapshot.clusters
    candidates = run.candidates(deployment)
    dead = run.dead.setdefault(run.kind(deployment), set())
    positions = run.snapshot.position
    counts = Counter(positions[r.cluster] for r in existing if r.cluster in positions)
    busier: dict[int, list[int]] = {}  # replicas already here -> candidate positions, in name order
    for position, count in counts.items():
        if position in candidates.members:
            insort(busier.setdefault(count, []), position)
    taken = {(replica.cluster, replica.index) for replica in existing}
    retry: list[int] = []  # clusters with none yet that did not fit, but may later
    cursor = 0

    def usable(position: int) -> bool:
        if position not in dead:
            return True
        if skipped is not None:
            skipped.add(position)
        return False

    def attempt(position: int) -> Fit | None:
        fit = run.fit(deployment, clusters[position])
        if fit is None and run.hopeless(deployment, clusters[position]):
            dead.add(position)
        return fit

    placed: list[Replica] = []
    for _ in range(missing):
        found: tuple[int, Fit] | None = None
        for rank, position in enumerate(retry):
            if usable(position) and (fit := attempt(position)) is not None:
                found = (position, fit)
                del retry[rank]
                break
        while found is None and cursor < len(candidates.positions):
            position = candidates.positions[cursor]
            cursor += 1
            if position in counts or not usable(position):
                continue
            fit = attempt(position)
            if fit is not None:
                found = (position, fit)
            elif position not in dead:
                retry.append(position)
        for count in sorted(busier) if found is None else ():
            group = busier[count]
            for rank, position in enumerate(group):
                if usable(position) and (fit := attempt(position)) is not None:
                    found = (position, fit)
                    del group[rank]
                    break
            if found is not None:
                break
        if found is None:
            break  # nothing fits now; capacity only shrinks from here
        position, fit = found
        counts[position] += 1
        insort(busier.setdefault(counts[position], []), position)
        name = clusters[position].name
        index = next(i for i in range(len(taken) + 1) if (name, i) not in taken)
        taken.add((name, index))
        placed.append(run.commit(deployment, name, index, fit))
    return placed
