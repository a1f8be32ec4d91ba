"""Checking a placement read back from state: does it still hold under the current fleet and rules?

`verify(fleet, workloads, placement)` returns one `Violation` per replica (or deployment) that the
placement document gets wrong, empty when the document is exactly what the planner keeps: given it
as `previous`, retain would keep every replica where it is, at the cost the document records. It
checks what retain checks, in retain's order, without filling or explaining anything, so it costs a
fraction of a plan:

- identity: the deployment is still declared and holds at most `replicas` replicas;
- the Eligibility rule and the taints: the cluster exists, the deployment's (and its cache's) clusterSelector
  still selects it, and no untolerated NoExecute taint drains it (an outage is not a taint: the
  planner never reads a cluster's health);
- the Pools and Engines rules: every engine's pools exist and still match its members, on one fabric, and the
  document records the member placements the current spec gives (pool, nodes, shared pods,
  devices, requests): what the ledger charges;
- the Capacity rule: the ledger admits each replica under the packing rule with those kept before it
  charged (oldest first, as retain charges them), so no pool is over its capacity;
- each deployment's `desired` and `scheduled` match its spec and its replicas.

What it does not check: that a short deployment could not have more replicas now (only a plan can
say that; with unchanged inputs the plan that wrote the document already tried). A placement with
violations is planned again with itself as `previous`: every replica that holds stays, the others
are re-placed or dropped (`FleetPlacement.check`).

Pure and deterministic: the same inputs give the same violations, sorted by where.

Cost: on the 100-cluster, 1,000-deployment benchmark fleet (4,553 replicas, benchmarks/plan_fleet.py)
the Placement provider's check() on unchanged inputs (load + verify) took 0.85 s against 1.49 s to
load and plan from nothing (best of 3, 2 cores at load average 4); planning alone took 1.30 s.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from modelplane.api import Fleet, Workloads
from modelplane.cel import SelectorEvaluator
from modelplane.scheduling.placement import Placement, Replica
from modelplane.scheduling.retain import as_candidate
from modelplane.scheduling.run import Run


@dataclass(frozen=True, order=True)
class Violation:
    """What is wrong with one replica (`deployment`, `cluster`, `index`) or deployment (cluster '')."""

    deployment: str
    cluster: str
    index: int
    why: str

    def __str__(self) -> str:
        where = f"{self.deployment} {self.cluster}#{self.index}" if self.cluster else self.deployment
        return f"{where}: {self.why}"


def verify(fleet: Fleet, workloads: Workloads, placement: Placement, *,
           evaluator: SelectorEvaluator | None = None) -> list[Violation]:
    run = Run(fleet, workloads, evaluator)
    counts = Counter(replica.deployment for replica in placement.replicas)
    found: list[Violation] = []
    for key, status in sorted(placement.deployments.items()):
        deployment = workloads.deployment(key)
        if deployment is None:
            continue  # its replicas say so
        if counts[key] > deployment.spec.replicas:
            found.append(Violation(key, "", 0, f"holds {counts[key]} replicas and wants {deployment.spec.replicas}"))
        elif (status.desired, status.scheduled) != (deployment.spec.replicas, counts[key]):
            found.append(Violation(key, "", 0, (
                f"the document says {status.scheduled}/{status.desired} replicas scheduled; the spec wants "
                f"{deployment.spec.replicas} and the document holds {counts[key]}")))
    found += [Violation(d.key, "", 0, "the document has no status for this deployment")
              for d in workloads.deployments if d.key not in placement.deployments]
    # retain's order (`retain.retain`): the oldest index first, so the ledger is charged alike
    for replica in sorted(placement.replicas, key=lambda r: (r.index, r.deployment, r.cluster)):
        why = _why_not_kept(run, replica)
        if why:
            found.append(Violation(replica.deployment, replica.cluster, replica.index, why))
    return sorted(found)


def _why_not_kept(run: Run, replica: Replica) -> str:
    """Why retain would not keep `replica` exactly as recorded ('' when it would, and then it is charged)."""
    deployment = run.workloads.deployment(replica.deployment)
    if deployment is None:
        return "no such ModelDeployment in the manifests"
    cluster = run.snapshot.cluster(replica.cluster)
    if cluster is None:
        return "no such InferenceCluster in the manifests"
    refused = run.ineligible(deployment, cluster, new=False)
    if refused is not None:
        return f"the cluster {refused.phrase}" + (f" ({refused.detail})" if refused.detail else "")
    kept = as_candidate(run, replica)
    if kept is None:
        return "an engine's pool is gone or no longer matches its member"
    if kept.fit.engines != replica.engines:
        return "the document's pools, costs or requests are not what the current spec gives"
    if not run.ledger.fits(kept.fit.charges):
        over = sorted(f"{cluster_name}/{pool}" for (cluster_name, pool), use in kept.fit.charges.items()
                      if not run.ledger.fits({(cluster_name, pool): use}))
        return f"{' and '.join(over)} cannot hold it beside the replicas kept before it (its capacity is exceeded)"
    run.commit(deployment, cluster.name, replica.index, kept.fit)
    return ""
