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
cluster: clusters that may not hold the deployment are counted once per eligibility key; on a
cluster where the first engine has no pool whose class any member claims on, the reasons are
exactly one miss per pool, so they are counted by class; on the clusters left (where the first
engine could claim somewhere) which engine fails and why its options do not fit the ledger is
worked out once per kind of replica, and the failing engine's pool misses once per class. A
property test, and a test on the benchmark's generated fleets, hold the two to the same lines.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from itertools import chain
from typing import NamedTuple

from modelplane.api import Engine, ModelDeployment
from modelplane.invariants import InvariantError, present
from modelplane.scheduling.engines import (
    Option,
    Options,
    Score,
    capacity_reasons,
    choose,
    held_by,
    misses,
    pool_miss,
    split_blocked,
    whole_node_reason,
)
from modelplane.scheduling.ledger import PoolKey, Trial
from modelplane.scheduling.match import MemberMatch, Miss
from modelplane.scheduling.reasons import Code, Reason, stage
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


def _latest(latest: dict[tuple[int, str], Miss], so_far: int, found: tuple[int, str], miss: Miss) -> int:
    """Keep `miss` in `latest` when its stage is at least `so_far`, the latest stage until now
    (dropping earlier stages' misses); the latest stage now."""
    now = stage(miss.code)
    if now > so_far:
        latest.clear()
    if now >= so_far:
        latest[found] = miss
    return max(now, so_far)


class Outcome(NamedTuple):
    """A kind of replica on one cluster against the report's ledger (`Briefing`): whether another
    replica fits, and if not which engine fails first and why its options do not fit the ledger."""

    failing: int | None
    """The index of the first engine with no option that fits; None when a replica fits."""
    capacity: tuple[tuple[tuple[str, str], int], ...]
    """The failing engine's capacity reasons, one per (pool, phrase), counted by (scope, phrase)."""
    nearest: Reason | None
    """The nearest of those capacity reasons."""
    blockable: bool = False
    """Whether the failing engine's members may be unable to split there (elsewhere `split_blocked`
    gives None: they split, or one pool hosts the whole engine)."""


class _Refusals(NamedTuple):
    """The ineligible clusters' reasons for one eligibility key (`Briefing._refused`)."""

    counts: Counter[tuple[str, str]]
    """Counted by (scope, phrase), but for the cache's."""
    cached: int
    """How many clusters do not stage the deployment's cache."""
    cache_sample: int | None
    """The position of one of them."""
    nearest: int | None
    """The position of the cluster with the nearest reason."""


class Briefing:
    """`diagnose(...).brief()` for the deployments of one run, worked out by kind of cluster
    (see the module docstring); memos live as long as the briefing, which is made after the run
    has placed (the ledger no longer changes).

    Shared between deployments, because a short deployment's reasons are otherwise worked out on
    every eligible cluster (varied 300 x 3,000 fleet: 892 short deployments, 7,763 verdicts, 3.4 of
    a re-place's 6.1 CPU s, growing with deployments x clusters):
    - the ineligible clusters' reasons, per eligibility key (`Run.eligibility_key`): deployments of
      one key differ there only in their cache's name, in the phrase of a cache reason, which is
      worded again for each deployment on one sample cluster;
    - on a cluster worked out in detail, which engine of a kind of replica fails first and its
      capacity reasons (`Outcome`, per kind and cluster: the ledger does not change);
    - per deployment, one pool miss per (engine, class), counted per class over the clusters where
      that engine fails first (`ClusterView.pool_classes`, counted in C), made a Reason only for the
      nearest, which is looked for among the misses of the latest stage, on the first cluster in
      `cluster/pool` order that has such a class (`_firsts`). Visiting every pool of every cluster
      worked out in detail per deployment cost the varied 1,000 x 10,000 fleet's report (2,545
      short deployments) 2.34-2.56 CPU s in a cold place and 2.39-2.61 in a re-place, against
      2.1-2.2 and 2.2-2.3 then (runs interleaved, pinned; the same placements);
    - the classes of the pools on the clusters worked out in detail, counted once per set of those
      clusters (`_classes_on`), which is also the count where one engine fails first on all of them
      (most deployments). With the outcomes' capacity counts kept as tuples (a `Counter.update` per
      cluster cost more than adding their one or two entries), the varied briefing of its 2,545
      short deployments went from a median 1.65-1.83 CPU s to 1.58-1.69 (five in-process
      repeats per run, five runs interleaved, pinned; the same lines)."""

    def __init__(self, run: Run):
        self.run = run
        self._held = _held_by(run)
        self._refusals: dict[Hashable, _Refusals] = {}
        self._pools: dict[Hashable, dict[str, list[tuple[str, int, PoolView]]]] = {}
        self._outcomes: dict[tuple[tuple[int, ...], int], Outcome] = {}
        self._class_counts: dict[frozenset[int], Counter[str]] = {}
        self._order = {cluster.position: rank for rank, cluster in
                       enumerate(sorted(run.snapshot.clusters, key=lambda cluster: f"{cluster.name}/"))}
        """Each cluster's place in the order of its pools' `cluster/pool` texts: a cluster's texts all
        sort before another's exactly when its `name/` does (Kubernetes names hold '-' and '.',
        which sort before '/', so "c-x/a" comes before "c/a" though c sorts before c-x)."""
        self._sample: dict[str, PoolView] = {}
        """A pool of each class in the fleet (a miss is the class's: any pool of it asks alike)."""
        for cluster in run.snapshot.clusters:
            for pool in cluster.pools:
                self._sample.setdefault(pool.class_name, pool)

    def brief(self, deployment: ModelDeployment) -> Brief:
        run, clusters = self.run, self.run.snapshot.clusters
        eligible = run.eligible(deployment)
        counts, nearest = self._refused(deployment, eligible)
        nearby = [nearest] if nearest else []
        engines = deployment.spec.engines
        kind = run.kind(deployment)
        among = detailed_clusters(run, deployment)
        detailed = sorted(among)
        fitting = 0
        failing: dict[int, list[ClusterView]] = {}
        for position in detailed:
            cluster = clusters[position]
            outcome = self._outcome(kind, engines, cluster)
            if outcome.failing is None:
                fitting += 1
                continue
            failing.setdefault(outcome.failing, []).append(cluster)
            if outcome.blockable:
                engine = engines[outcome.failing]
                blocked = split_blocked(engine, run.options(engine, cluster), cluster)
                if blocked is not None:
                    counts[(blocked.scope, blocked.phrase)] += 1
                    nearby.append(blocked)
            for key, count in outcome.capacity:
                counts[key] += count
            if outcome.nearest is not None:
                nearby.append(outcome.nearest)
        # Each pool of a cluster where an engine fails first has that engine's miss of its class:
        # counted per class. The nearest miss is the first `cluster/pool` among the latest stage's.
        pool_misses: dict[tuple[int, str], Miss | None] = {}
        latest: dict[tuple[int, str], Miss] = {}
        latest_stage = -1
        on_detailed = self._classes_on(among)
        for index, on in failing.items():
            # Mostly the first engine fails first on every cluster worked out in detail.
            on_classes = on_detailed if len(on) == len(detailed) else \
                Counter(chain.from_iterable(cluster.pool_classes for cluster in on))
            for class_name, count in on_classes.items():
                miss = pool_misses[(index, class_name)] = pool_miss(engines[index], self._sample[class_name],
                                                                    run.matcher)
                if miss is not None:
                    counts[("pool(s)", miss.phrase)] += count
                    latest_stage = _latest(latest, latest_stage, (index, class_name), miss)
        # Elsewhere the first engine fails first, on every pool, each pool with its class's miss.
        elsewhere: dict[str, tuple[str, PoolView]] = {}
        for class_name, pools in self._eligible_pools(deployment, eligible).items():
            left = len(pools) - on_detailed[class_name]
            if left:
                found = (0, class_name)
                where, first = elsewhere[class_name] = next((where, pool) for where, position, pool in pools
                                                            if position not in among)
                miss = pool_misses[found] if found in pool_misses else pool_miss(engines[0], first, run.matcher)
                if miss is None:  # not `present`, which formats its message every time: 119k times in the
                    # varied 1,000 x 10,000 re-place's report (2.08-2.16 -> 1.96-2.03 CPU s, interleaved, pinned)
                    raise InvariantError(f"engine {engines[0].name} misses pool {first.key}, on which it was not "
                                         "placed")
                counts[("pool(s)", miss.phrase)] += left
                latest_stage = _latest(latest, latest_stage, (-1, class_name), miss)
        if latest and not fitting:
            # Misses at different pools never tie on `cluster/pool`: only the nearest is made a Reason.
            where, pool, miss = min(self._firsts(latest, failing, elsewhere), key=lambda entry: entry[0])
            nearby.append(miss.at(pool))
        return _brief(deployment.key, len(clusters), fitting, counts, nearby)

    def _firsts(self, latest: dict[tuple[int, str], Miss], failing: dict[int, list[ClusterView]],
                elsewhere: dict[str, tuple[str, PoolView]]) -> Iterator[tuple[str, PoolView, Miss]]:
        """Per engine, the first pool by `cluster/pool` among those of the classes it misses at the
        latest stage (`latest`, by engine index, -1 for the pools outside the detailed clusters),
        with its miss. Clusters order their pools' `cluster/pool` texts as their `name/` texts do
        (`_order`), so only the first cluster with such a class is read."""
        for index, on in failing.items():
            classes = {name for at, name in latest if at == index}
            if classes:
                first = min((cluster for cluster in on if not classes.isdisjoint(cluster.class_names)),
                            key=lambda cluster: self._order[cluster.position])
                where, pool = min((first.first_pools[name] for name in classes if name in first.first_pools),
                                  key=lambda entry: entry[0])
                yield where, pool, latest[(index, pool.class_name)]
        for (at, name), miss in latest.items():
            if at == -1:
                yield *elsewhere[name], miss

    def _outcome(self, kind: tuple[int, ...], engines: tuple[Engine, ...], cluster: ClusterView) -> Outcome:
        """`_verdict`'s trial of each engine in turn on an eligible cluster, for a kind of replica
        (`engines`: of that kind, whose options are their shapes')."""
        key = (kind, cluster.position)
        found = self._outcomes.get(key)
        if found is None:
            run, trial = self.run, Trial(self.run.ledger)
            found = Outcome(None, (), None)
            for index, engine in enumerate(engines):
                options = run.options(engine, cluster)
                option = choose(options, trial)
                if option is None:
                    capacity = capacity_reasons(options, trial, self._held)
                    counted = Counter((r.scope, r.phrase) for r in _distinct(tuple(capacity)))
                    found = Outcome(index, tuple(counted.items()), min(capacity, key=_nearness, default=None),
                                    not options.split and (options.blocked is not None or not options.single))
                    break
                trial.add(option.needs)
            self._outcomes[key] = found
        return found

    def _refused(self, deployment: ModelDeployment, eligible: frozenset[int]
                 ) -> tuple[Counter[tuple[str, str]], Reason | None]:
        """The reasons of the clusters that may not hold a new replica, counted, and the nearest."""
        run, clusters = self.run, self.run.snapshot.clusters
        key = run.eligibility_key(deployment)
        found = self._refusals.get(key)
        if found is None:
            # The rule reads only a cluster's labels and taints: the first by name of clusters alike
            # answers for all of them (its reason is theirs but for the name, and the nearest of them).
            # The varied 1,000 x 10,000 fleet has 72 such groups; asking the rule of every cluster per
            # eligibility key, its report took 2.24-2.34 CPU s, against 1.87-1.95 asking it of each
            # group (cold place and re-place, interleaved, pinned; the same reasons).
            refused = [(alike, present(run.ineligible(deployment, alike[0], new=True), "an ineligible cluster refuses"))
                       for alike in run.snapshot.alike if alike[0].position not in eligible]
            counts: Counter[tuple[str, str]] = Counter()
            for alike, r in refused:
                if r.code is not Code.CACHE_NOT_STAGED:
                    counts[(r.scope, r.phrase)] += len(alike)
            cached = [alike for alike, r in refused if r.code is Code.CACHE_NOT_STAGED]
            nearest = min(refused, key=lambda entry: _nearness(entry[1]), default=None)
            found = self._refusals[key] = _Refusals(
                counts, sum(len(alike) for alike in cached),
                min((cluster.position for alike in cached for cluster in alike), default=None),
                None if nearest is None else nearest[0][0].position)
        counts = Counter(found.counts)
        if found.cache_sample is not None:
            reason = present(run.ineligible(deployment, clusters[found.cache_sample], new=True),
                             "a deployment of the same eligibility key is refused by the same cluster")
            counts[(reason.scope, reason.phrase)] += found.cached
        nearest = None if found.nearest is None else run.ineligible(deployment, clusters[found.nearest], new=True)
        return counts, nearest

    def _classes_on(self, positions: frozenset[int]) -> Counter[str]:
        """The classes of the pools on the clusters at `positions`, counted (read only: shared by
        every deployment worked out in detail on the same clusters)."""
        found = self._class_counts.get(positions)
        if found is None:
            clusters = self.run.snapshot.clusters
            found = self._class_counts[positions] = Counter(
                chain.from_iterable(clusters[position].pool_classes for position in positions))
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
             held: Callable[[PoolKey], str]) -> ClusterVerdict:
    """Whether another replica fits the cluster, and if not why, and why the pools an engine passes
    over cannot host it. `held`: who holds a pool's nodes (`_held_by`)."""
    ineligible = run.ineligible(deployment, cluster, new=True)
    if ineligible is not None:
        return ClusterVerdict(cluster.name, indices, (ineligible,))
    trial = Trial(run.ledger)
    used: list[str] = []
    skipped: list[Reason] = []
    choices: list[str] = []
    # explain names the engine on each pool line when there are several (a status does not).
    named = len(deployment.spec.engines) > 1
    for engine in deployment.spec.engines:
        options = run.options(engine, cluster)
        option = choose(options, trial)
        missed = misses(engine, options, cluster, run.matcher)
        missed = tuple(reason._replace(engine=engine.name) for reason in missed) if named else missed
        skipped.extend(missed)
        if option is None:
            capacity = capacity_reasons(options, trial, held)
            if named:
                capacity = [reason._replace(engine=engine.name) for reason in capacity]
            reasons = (*missed, *capacity)
            return ClusterVerdict(cluster.name, indices, tuple(sorted(reasons, key=lambda r: (r.pool or "", r.phrase))))
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
