"""Explain: why a deployment is where it is, and why it is not elsewhere.

`diagnose(run, deployment)` asks every cluster, against the run's final ledger, whether another
replica of the deployment could go there and if not why (cluster-level reasons, or per pool: which
request no device satisfies and the value the closest device has, counts, synthetic-only matches,
fabrics, free nodes and who holds them). This is the only module that turns reasons into sentences.

One model says why a deployment cannot take another replica: a `Brief` (how many clusters could
host one, the reasons counted by phrase, the closest near-miss), worded once by `Brief.lines()`:
`0/3 clusters can host another replica of ml-team/kimi: 1 cluster(s) had untolerated taint {...},
2 pool(s) had too few free nodes (needs 2, has 1)`, then the closest near-miss and what would make it
fit. Those lines are a short deployment's `reasons` in the placement document, which the status
condition Scheduled and the pull-request comment show, and the head of what `explain` prints.

Two paths build a Brief. `Explanation.brief()` from a verdict per cluster (`diagnose`, for
explain); `Briefing.brief(deployment)` for every short deployment of a run without asking every
cluster: clusters that may not hold the deployment are counted once per kind of deployment; on a
cluster where the first engine has no pool whose class any member claims on, the reasons are
exactly one miss per pool, so they are counted by class; only the clusters left (where the first
engine could claim somewhere) get a full verdict. A property test holds the two to the same lines.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from modelplane.api import Engine, ModelDeployment
from modelplane.invariants import present
from modelplane.scheduling.engines import (
    Option,
    Options,
    Score,
    capacity_reasons,
    choose,
    held_by,
    misses,
    pool_miss,
    whole_node_reason,
)
from modelplane.scheduling.ledger import PoolKey, Trial
from modelplane.scheduling.match import MemberMatch, Miss
from modelplane.scheduling.reasons import Reason, stage
from modelplane.scheduling.run import Run
from modelplane.scheduling.snapshot import ClusterView, PoolView


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
    choices: tuple[str, ...] = ()
    """When one would fit: per engine, the pools that could also host it and why the chosen one won
    (score parts), and why its pods keep whole nodes when they do."""


class Brief(NamedTuple):
    """Why a deployment cannot take another replica, in short (see the module docstring)."""

    deployment: str
    clusters: int
    """Clusters in the fleet."""
    fitting: int
    """Clusters where another replica would fit."""
    counts: Counter[tuple[str, str]]
    """Per (scope, phrase), how many clusters or pools gave that reason."""
    closest: Reason | None
    """The near-miss that got furthest (the latest stage, then the smallest shortfall); None when
    another replica fits somewhere."""

    def lines(self) -> tuple[str, ...]:
        """The summary, and the closest near-miss with what would make it fit."""
        if self.clusters == 0:
            summary = f"0/0 clusters can host a replica of {self.deployment}: the fleet has no InferenceCluster"
        else:
            summary = f"{self.fitting}/{self.clusters} clusters can host another replica of {self.deployment}"
            if self.counts:
                parts = sorted(f"{count} {scope} {phrase}" for (scope, phrase), count in self.counts.items())
                summary = f"{summary}: {', '.join(parts)}"
        closest = self.closest
        if closest is None:
            return (summary,)
        return summary, f"closest: {closest.where}: {closest.detail}; to fit: {closest.hint}"


def _brief(deployment: str, clusters: int, fitting: int, counts: Counter[tuple[str, str]],
           nearby: list[Reason]) -> Brief:
    return Brief(deployment, clusters, fitting, counts, None if fitting or not nearby else min(nearby, key=_nearness))


@dataclass(frozen=True)
class Explanation:
    deployment: str
    desired: int
    scheduled: int
    clusters: tuple[ClusterVerdict, ...]

    def brief(self) -> Brief:
        counts = Counter((r.scope, r.phrase) for v in self.clusters for r in _distinct(v.reasons))
        fitting = sum(1 for verdict in self.clusters if not verdict.reasons)
        return _brief(self.deployment, len(self.clusters), fitting, counts, [r for v in self.clusters for r in v.reasons])

    def lines(self) -> list[str]:
        """The full explanation, for `modelplane explain`."""
        out = [f"{self.deployment}: {self.scheduled}/{self.desired} replicas scheduled", *self.brief().lines(), ""]
        for verdict in self.clusters:
            placed = f" ({_replicas(verdict.replicas)})" if verdict.replicas else ""
            if not verdict.reasons:
                out.append(f"cluster {verdict.cluster}{placed}: another replica fits on "
                           f"{', '.join(verdict.would_use)}")
                out.extend(f"  {choice}" for choice in verdict.choices)
                out.extend(f"  skipped {_pool(r)}: {r.phrase}: {r.detail}" for r in _distinct(verdict.skipped))
                continue
            out.append(f"cluster {verdict.cluster}{placed}:")
            for reason in _distinct(verdict.reasons):
                where = f"{_pool(reason)}: " if reason.pool else ""
                out.append(f"  {where}{reason.phrase}: {reason.detail}")
        return out


def _replicas(indices: tuple[int, ...]) -> str:
    """`replica #0`, `replicas #0, #2`."""
    return ("replica " if len(indices) == 1 else "replicas ") + ", ".join(f"#{index}" for index in indices)


def _pool(reason: Reason) -> str:
    """`pool a100`, and in a deployment of several engines `pool a100 for engine prefill`."""
    return f"pool {reason.pool}" + (f" for engine {reason.engine}" if reason.engine else "")


def _nearness(reason: Reason) -> tuple[int, int, str, str]:
    return -reason.stage, reason.shortfall, reason.where, reason.detail


def detailed_clusters(run: Run, deployment: ModelDeployment) -> frozenset[int]:
    """The clusters on which `Briefing.brief` works a deployment out in detail, against the ledger: the
    eligible ones with a pool its first engine claims on (elsewhere its reasons do not read the ledger)."""
    return run.eligible(deployment) & run.reach(deployment.spec.engines[0])


class Briefing:
    """`diagnose(...).brief()` for the deployments of one run, worked out by kind of cluster
    (see the module docstring); memos live as long as the briefing."""

    def __init__(self, run: Run):
        self.run = run
        self._held = _held_by(run)
        self._refusals: dict[Hashable, tuple[Counter[tuple[str, str]], Reason | None]] = {}
        self._pools: dict[Hashable, dict[str, list[tuple[str, int, PoolView]]]] = {}

    def brief(self, deployment: ModelDeployment) -> Brief:
        run, clusters = self.run, self.run.snapshot.clusters
        eligible = run.eligible(deployment)
        refused, nearest = self._refused(deployment, eligible)
        counts = Counter(refused)
        nearby = [nearest] if nearest else []
        engine = deployment.spec.engines[0]
        detailed = sorted(detailed_clusters(run, deployment))
        fitting = 0
        for position in detailed:
            verdict = _verdict(run, deployment, clusters[position], (), self._held, skipped_too=False)
            fitting += not verdict.reasons
            counts.update((r.scope, r.phrase) for r in _distinct(verdict.reasons))
            nearby.extend(verdict.reasons)
        # Elsewhere the first engine fails first, on every pool, each pool with its class's miss.
        skipped = set(detailed)
        on_skipped = Counter(pool.class_name for position in detailed for pool in clusters[position].pools)
        # Each class's miss is a Reason at its first pool, but only the nearest can be shown: misses
        # at different pools never tie on (stage, where), so only that one is built.
        nearest_miss: tuple[tuple[int, str], Miss, PoolView] | None = None
        for class_name, pools in self._eligible_pools(deployment, eligible).items():
            left = len(pools) - on_skipped[class_name]
            if left:
                where, first = next((where, pool) for where, position, pool in pools if position not in skipped)
                miss = present(pool_miss(engine, first, run.matcher),
                               f"engine {engine.name} misses pool {first.key}, on which it was not placed")
                counts[("pool(s)", miss.phrase)] += left
                rank = (-stage(miss.code), where)
                if nearest_miss is None or rank < nearest_miss[0]:
                    nearest_miss = (rank, miss, first)
        if nearest_miss is not None:
            nearby.append(nearest_miss[1].at(nearest_miss[2]))
        return _brief(deployment.key, len(clusters), fitting, counts, nearby)

    def _refused(self, deployment: ModelDeployment, eligible: frozenset[int]
                 ) -> tuple[Counter[tuple[str, str]], Reason | None]:
        """The reasons of the clusters that may not hold a new replica, counted, and the nearest."""
        cache = deployment.spec.model_cache_ref
        key = (self.run.eligibility_key(deployment), cache.name if cache else None)
        found = self._refusals.get(key)
        if found is None:
            reasons = [reason for cluster in self.run.snapshot.clusters if cluster.position not in eligible
                       if (reason := self.run.ineligible(deployment, cluster, new=True)) is not None]
            found = self._refusals[key] = (Counter((r.scope, r.phrase) for r in reasons),
                                           min(reasons, key=_nearness, default=None))
        return found

    def _eligible_pools(self, deployment: ModelDeployment, eligible: frozenset[int]
                        ) -> dict[str, list[tuple[str, int, PoolView]]]:
        """Per class, the pools of that class on the eligible clusters, by `cluster/pool`."""
        key = self.run.eligibility_key(deployment)
        found = self._pools.get(key)
        if found is None:
            found = self._pools[key] = {}
            for position in sorted(eligible):
                for pool in self.run.snapshot.clusters[position].pools:
                    found.setdefault(pool.class_name, []).append((f"{pool.cluster}/{pool.name}", position, pool))
            for pools in found.values():
                pools.sort(key=lambda entry: entry[0])
        return found


def diagnose(run: Run, deployment: ModelDeployment, replicas: dict[str, list[int]]) -> Explanation:
    held = _held_by(run)
    verdicts = tuple(_verdict(run, deployment, cluster, tuple(sorted(replicas.get(cluster.name, []))), held)
                     for cluster in run.snapshot.clusters)
    scheduled = sum(len(indices) for indices in replicas.values())
    return Explanation(deployment.key, deployment.spec.replicas, scheduled, verdicts)


def _verdict(run: Run, deployment: ModelDeployment, cluster: ClusterView, indices: tuple[int, ...],
             held: Callable[[PoolKey], str], *, skipped_too: bool = True) -> ClusterVerdict:
    """Whether another replica fits the cluster, and if not why; with `skipped_too`, also why the
    pools an engine passes over cannot host it (explain prints them; a status does not). `held`:
    who holds a pool's nodes (`_held_by`)."""
    ineligible = run.ineligible(deployment, cluster, new=True)
    if ineligible is not None:
        return ClusterVerdict(cluster.name, indices, (ineligible,))
    trial = Trial(run.ledger)
    used: list[str] = []
    skipped: list[Reason] = []
    choices: list[str] = []
    # explain names the engine on each pool line when there are several (a status does not).
    named = skipped_too and len(deployment.spec.engines) > 1
    for engine in deployment.spec.engines:
        options = run.options(engine, cluster)
        option = choose(options, trial)
        if option is None or skipped_too:
            missed = misses(engine, options, cluster, run.matcher)
            missed = tuple(reason._replace(engine=engine.name) for reason in missed) if named else missed
            skipped.extend(missed)
        if option is None:
            capacity = capacity_reasons(options, trial, held)
            if named:
                capacity = [reason._replace(engine=engine.name) for reason in capacity]
            reasons = (*missed, *capacity)
            return ClusterVerdict(cluster.name, indices, tuple(sorted(reasons, key=lambda r: (r.pool or "", r.phrase))))
        if skipped_too:
            choices += _choice(engine, option, options, trial, run)
        trial.add(option.needs)
        used.append(f"{engine.name}: {_where(engine, option)}")
    return ClusterVerdict(cluster.name, indices, (), tuple(used), tuple(skipped), tuple(choices))


def _choice(engine: Engine, chosen: Option, options: Options, trial: Trial, run: Run) -> list[str]:
    """Why the engine's pods keep whole nodes where they do, and the options that lost to the
    chosen one: the score part that decided, or that the ledger had no room."""
    lines = []
    for member, pool in zip(engine.members, chosen.pools, strict=True):
        match = run.matcher.match_class(member.node_selector, pool)
        if isinstance(match, MemberMatch) and match.claims_dra:
            why = whole_node_reason(engine.multi_node, match.sizes(pool.kinds), match.pinned, pool)
            if why is not None:
                lines.append(f"{engine.name} ({member.role}) on {pool.name} takes whole nodes: {why}")
    others = [option for option in (*options.single, *options.split) if option is not chosen]
    if others:
        lines.append(f"{engine.name}: chose {_where(engine, chosen)} ({_score_text(chosen.score)})")
    for option in others:
        lost = "no room" if not trial.fits(option.needs) else _decided(chosen, option)
        lines.append(f"  over {_where(engine, option)} ({_score_text(option.score)}): {lost}")
    return lines


_PARTS = ("fewer devices per node", "less device memory", "cheaper", "earlier in the cluster's pool list")
_MEMORY = Score._fields.index("memory")
_PRICE = Score._fields.index("price")
NEAR_MEMORY = Decimal("0.02")
"""Device memory this close (a share of the larger) reads as the same hardware to a person: when it
decides for a dearer pool, explain says so and what it cost."""


def _decided(chosen: Option, other: Option) -> str:
    if len({p.key for p in chosen.pools}) != len({p.key for p in other.pools}):
        return "one pool for the whole engine before a split"
    part = next((i for i, (a, b) in enumerate(zip(chosen.score, other.score)) if a != b), len(_PARTS) - 1)
    if part == _PRICE and chosen.score.price[0] != other.score.price[0]:
        return "priced before unpriced"
    if part == _MEMORY:
        return _memory_decided(chosen.score, other.score)
    return _PARTS[part]


def _memory_decided(chosen: Score, other: Score) -> str:
    """`less device memory`; when the memory differs by under `NEAR_MEMORY` and the chosen pool costs
    more per hour, also that the score compares memory before price, and by how much each differ."""
    (unpriced, currency, amount), (other_unpriced, other_currency, other_amount) = chosen.price, other.price
    less = (other.memory - chosen.memory) / other.memory
    if unpriced or other_unpriced or currency != other_currency or amount <= other_amount or less >= NEAR_MEMORY:
        return _PARTS[_MEMORY]
    return (f"less device memory, by only {less * 100:.1f}%: device memory is compared before price, so it decided "
            f"though the chosen pool costs {amount - other_amount:.2f} {currency}/h more")


def _score_text(score: Score) -> str:
    unpriced, currency, amount = score.price
    price = "unpriced" if unpriced else f"{amount:.2f} {currency}/h"
    gib = (score.memory / 2**30).quantize(Decimal("0.1"))
    return f"{score.devices} devices/node, {gib}GiB, {price}, pool #{'+'.join(str(o + 1) for o in score.order)}"


def _where(engine: Engine, option: Option) -> str:
    """`pool`, or for a split engine each member's pool: `a (Leader) + b (Worker)`."""
    pools = {pool.name for pool in option.pools}
    if len(pools) == 1:
        return pools.pop()
    return " + ".join(f"{pool.name} ({member.role})" for member, pool in zip(engine.members, option.pools, strict=True))


def _held_by(run: Run) -> Callable[[PoolKey], str]:
    """Who holds each pool's nodes, worded once per pool: explain asks after the run has placed, when
    the ledger no longer changes."""
    return functools.cache(lambda pool: held_by(run.ledger.holders(pool)))


def _distinct(reasons: tuple[Reason, ...]) -> list[Reason]:
    """One reason per (pool, phrase, engine): two split options short on the same pool say it once."""
    seen: set[tuple[str | None, str, str | None]] = set()
    out: list[Reason] = []
    for reason in reasons:
        key = (reason.pool, reason.phrase, reason.engine)
        if key not in seen:
            seen.add(key)
            out.append(reason)
    return out
