"""Explain: why a deployment is where it is, and why it is not elsewhere.

`diagnose(run, deployment)` asks every cluster, against the run's final ledger, whether another
replica of the deployment could go there and if not why (cluster-level reasons, or per pool: which
request no device satisfies and the value the closest device has, counts, synthetic-only matches,
fabrics, free nodes and who holds them). The summary reads like the Kubernetes scheduler's
`0/3 clusters can host another replica of ml-team/kimi: 1 cluster(s) had untolerated taint {...},
2 pool(s) had too few free nodes (needs 2, has 1)`, followed by the closest near-miss and what would
make it fit. This is the only module that turns reasons into sentences.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from modelplane.api import ModelDeployment
from modelplane.scheduling.engines import EngineOption, capacity_reasons
from modelplane.scheduling.ledger import Trial
from modelplane.scheduling.reasons import Reason
from modelplane.scheduling.run import Run
from modelplane.scheduling.snapshot import ClusterView


@dataclass(frozen=True)
class ClusterVerdict:
    cluster: str
    replicas: tuple[int, ...]
    """Indices of the deployment's replicas on this cluster."""
    reasons: tuple[Reason, ...]
    """Why another replica cannot go here; empty when one would fit."""
    would_use: tuple[str, ...] = ()
    """When one would fit: `engine: pool` for each engine."""
    skipped: tuple[Reason, ...] = ()
    """When one would fit: the pools that cannot host an engine whatever their capacity, and why."""


@dataclass(frozen=True)
class Explanation:
    deployment: str
    desired: int
    scheduled: int
    clusters: tuple[ClusterVerdict, ...]

    @property
    def fitting(self) -> int:
        return sum(1 for verdict in self.clusters if not verdict.reasons)

    def summary(self) -> str:
        total = len(self.clusters)
        if total == 0:
            return f"0/0 clusters can host a replica of {self.deployment}: the fleet has no InferenceCluster"
        head = f"{self.fitting}/{total} clusters can host another replica of {self.deployment}"
        counts = Counter((r.scope, r.phrase) for v in self.clusters for r in _distinct(v.reasons))
        if not counts:
            return head
        parts = sorted(f"{count} {scope} {phrase}" for (scope, phrase), count in counts.items())
        return f"{head}: {', '.join(parts)}"

    def closest(self) -> Reason | None:
        """The near-miss that got furthest: the latest stage, then the smallest shortfall."""
        reasons = [r for v in self.clusters for r in v.reasons]
        if not reasons or self.fitting:
            return None
        return min(reasons, key=lambda r: (-r.stage, r.shortfall, r.where, r.detail))

    def reasons(self) -> tuple[str, ...]:
        """The short form kept in a short deployment's status: the summary and the closest miss."""
        closest = self.closest()
        lines = [self.summary()]
        if closest is not None:
            lines.append(f"closest: {closest.where}: {closest.detail}; to fit: {closest.hint}")
        return tuple(lines)

    def lines(self) -> list[str]:
        """The full explanation, for `modelplane explain`."""
        out = [f"{self.deployment}: {self.scheduled}/{self.desired} replicas scheduled", *self.reasons(), ""]
        for verdict in self.clusters:
            placed = f" (replicas {', '.join(map(str, verdict.replicas))})" if verdict.replicas else ""
            if not verdict.reasons:
                out.append(f"cluster {verdict.cluster}{placed}: another replica fits on "
                           f"{', '.join(verdict.would_use)}")
                out.extend(f"  skipped pool {r.pool}: {r.phrase}: {r.detail}" for r in _distinct(verdict.skipped))
                continue
            out.append(f"cluster {verdict.cluster}{placed}:")
            for reason in _distinct(verdict.reasons):
                where = f"pool {reason.pool}: " if reason.pool else ""
                out.append(f"  {where}{reason.phrase}: {reason.detail}")
        return out


def diagnose(run: Run, deployment: ModelDeployment, replicas: dict[str, list[int]]) -> Explanation:
    verdicts = tuple(_verdict(run, deployment, cluster, tuple(sorted(replicas.get(cluster.name, []))))
                     for cluster in run.snapshot.clusters)
    scheduled = sum(len(indices) for indices in replicas.values())
    return Explanation(deployment.key, deployment.spec.replicas, scheduled, verdicts)


def _verdict(run: Run, deployment: ModelDeployment, cluster: ClusterView, indices: tuple[int, ...]) -> ClusterVerdict:
    ineligible = run.ineligible(deployment, cluster, new=True)
    if ineligible is not None:
        return ClusterVerdict(cluster.name, indices, (ineligible,))
    trial = Trial(run.ledger)
    used: list[str] = []
    skipped: list[Reason] = []
    for index, engine in enumerate(deployment.spec.engines):
        options = run.options(deployment, index, cluster)
        skipped.extend(options.misses)
        option = options.choose(trial)
        if option is None:
            reasons = (*options.misses, *capacity_reasons(options, trial, run.ledger.holders))
            return ClusterVerdict(cluster.name, indices, tuple(sorted(reasons, key=lambda r: (r.pool or "", r.phrase))))
        for pool, nodes in option.needs().items():
            trial.add(pool, nodes)
        used.append(f"{engine.name}: {_where(option)}")
    return ClusterVerdict(cluster.name, indices, (), tuple(used), tuple(skipped))


def _where(option: EngineOption) -> str:
    """`pool`, or for a split engine each member's pool: `a (Leader) + b (Worker)`."""
    pools = {member.pool.name for member in option.members}
    if len(pools) == 1:
        return pools.pop()
    return " + ".join(f"{member.pool.name} ({member.role})" for member in option.members)


def _distinct(reasons: tuple[Reason, ...]) -> list[Reason]:
    """One reason per (pool, phrase): two split options short on the same pool say it once."""
    seen: set[tuple[str | None, str]] = set()
    out: list[Reason] = []
    for reason in reasons:
        key = (reason.pool, reason.phrase)
        if key not in seen:
            seen.add(key)
            out.append(reason)
    return out
