"""Engines on one cluster: which pool(s) can run each member, and which option fits the ledger.

Rule 3 (the seeds: "preferring one pool for the whole engine and splitting members across pools
only when no pool satisfies them all"): prefer one pool that matches every member of the engine and
has room for all of them; split the members across pools of the same cluster only when no single
pool can host the whole engine, and never across pools of different fabrics (type plus InfiniBand
fabric id; pools without a fabric share the cluster's default network, so they pair). Every member
is matched against every pool, so a Leader that fits only pool A and a Worker that fits only pool B
split over A and B. A member that claims no device goes to the pool of a member that does (a
coordinator-only Leader rides with its Workers), so only claiming members are split. An engine that
claims no DRA device on a pool cannot run there (its pods would have nothing to claim).

Rule 4: a member costs pods x copies nodes (pods = 1 for Standalone/Leader, `worker.nodes` for a
Worker), 0 if it claims no DRA device.

Options are computed once per (engine, cluster) and tried in the platform team's pool order, single
pools first; the first that fits wins. Greedy across engines of a replica (each takes the first
option that fits what earlier engines left): it can wrongly reject a replica, never overcommit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from modelplane.api import Engine, FabricType, Role
from modelplane.scheduling.ledger import PoolKey, Trial
from modelplane.scheduling.match import Matcher, MemberMatch, Miss
from modelplane.scheduling.placement import MemberPlacement
from modelplane.scheduling.reasons import Code, Reason
from modelplane.scheduling.snapshot import ClusterView, PoolView


class MemberOption(NamedTuple):
    role: Role
    pool: PoolView
    nodes: int
    match: MemberMatch


class EngineOption:
    """Where each member of an engine would run; `needs` is its cost per pool, computed once
    (options are built per engine and cluster in the scheduler's hot path)."""

    __slots__ = ("members", "_needs")

    def __init__(self, members: tuple[MemberOption, ...]):
        self.members = members
        needs: dict[PoolKey, int] = {}
        for member in members:
            needs[member.pool.key] = needs.get(member.pool.key, 0) + member.nodes
        self._needs = tuple(needs.items())

    def needs(self) -> dict[PoolKey, int]:
        return dict(self._needs)

    def fits(self, trial: Trial) -> bool:
        return all(trial.free(pool) >= nodes for pool, nodes in self._needs)

    def placement(self) -> dict[Role, MemberPlacement]:
        return {m.role: MemberPlacement(pool=m.pool.name, nodes=m.nodes, requests=m.match.claimed())
                for m in self.members}


@dataclass(frozen=True)
class EngineOptions:
    single: tuple[EngineOption, ...]
    split: tuple[EngineOption, ...]
    failed: tuple[tuple[Miss, PoolView], ...]
    split_blocked: Reason | None
    """Why the members could not split (a fabric between their pools, or a member with no pool)."""
    unexamined: tuple[PoolView, ...]
    """Pools whose class no member can claim on (the prefilter said so); why is worked out on demand."""
    engine: Engine
    matcher: Matcher

    def choose(self, trial: Trial) -> EngineOption | None:
        for option in self.single:
            if option.fits(trial):
                return option
        for option in self.split:
            if option.fits(trial):
                return option
        return None

    @property
    def misses(self) -> tuple[Reason, ...]:
        """Why each pool cannot host the engine whatever the capacity (for explain)."""
        late = [(result, pool) for pool in self.unexamined
                if isinstance(result := _on_pool(self.engine, pool, self.matcher)[0], Miss)]
        failed = sorted((*self.failed, *late), key=lambda miss_pool: miss_pool[1].name)
        reasons = tuple(miss.at(pool) for miss, pool in failed)
        return (*reasons, self.split_blocked) if self.split_blocked else reasons


def engine_options(engine: Engine, cluster: ClusterView, matcher: Matcher, usable: frozenset[str]) -> EngineOptions:
    """The engine's options on the cluster; `usable` (a superset of the classes some member can
    claim on) lets pools of other classes be skipped without matching: no member claims there, so
    such a pool can neither host the engine nor take a member of a split."""
    single: list[EngineOption] = []
    failed: list[tuple[Miss, PoolView]] = []
    unexamined: list[PoolView] = []
    claiming: list[list[MemberOption]] = [[] for _ in engine.members]
    for pool in cluster.pools:
        if pool.class_name not in usable:
            unexamined.append(pool)
            continue
        result, members = _on_pool(engine, pool, matcher)
        if isinstance(result, Miss):
            failed.append((result, pool))
        else:
            single.append(result)
        for index, option in members:
            claiming[index].append(option)
    split, blocked = _splits(claiming) if len(engine.members) == 2 else ([], [])
    reason = None
    if blocked and not split:
        reason = _fabric_blocked(engine, cluster, blocked[0])
    elif not single and not split:
        reason = _member_without_pool(engine, cluster, claiming)
    return EngineOptions(tuple(single), tuple(split), tuple(failed), reason, tuple(unexamined), engine, matcher)


def _on_pool(engine: Engine, pool: PoolView, matcher: Matcher
             ) -> tuple[EngineOption | Miss, list[tuple[int, MemberOption]]]:
    """The whole engine on one pool (or why not: the first member that misses), and every member
    that can claim there on its own (the split candidates), whether or not the others match."""
    options: list[MemberOption] = []
    claiming: list[tuple[int, MemberOption]] = []
    miss: Miss | None = None
    for index, member in enumerate(engine.members):
        match = matcher.match_class(member.node_selector, pool)
        if isinstance(match, Miss):
            miss = miss or match
            continue
        option = MemberOption(member.role, pool, member.pods * engine.copies if match.claims_dra else 0, match)
        options.append(option)
        if match.claims_dra and member.node_selector is not None:
            claiming.append((index, option))
    if miss is not None:
        return miss, claiming
    if not claiming:
        return _synthetic_only(engine.name, pool), claiming
    return EngineOption(tuple(options)), claiming


def _synthetic_only(engine: str, pool: PoolView) -> Miss:
    return Miss(Code.ONLY_SYNTHETIC, "matched only synthetic devices (nothing to claim)",
                lambda: (f"every request of engine {engine} resolves to a Synthetic device of class "
                         f"{pool.class_name}, so its pods would claim no GPU",
                         "request a device the class publishes with claim: DRA"))


Pairing = tuple[MemberOption, MemberOption]


def _splits(claiming: list[list[MemberOption]]) -> tuple[list[EngineOption], list[Pairing]]:
    """Every (pool of member 0, pool of member 1) pair on different pools of one fabric, in pool
    order; and the pairs a fabric boundary blocked."""
    splits: list[EngineOption] = []
    blocked: list[Pairing] = []
    for first in claiming[0]:
        for second in claiming[1]:
            if first.pool.name == second.pool.name:
                continue
            if first.pool.fabric != second.pool.fabric:
                blocked.append((first, second))
                continue
            splits.append(EngineOption((first, second)))
    return splits, blocked


def _fabric_blocked(engine: Engine, cluster: ClusterView, pairing: Pairing) -> Reason:
    first, second = pairing
    return Reason(Code.FABRIC_MISMATCH, "could split the engine only across pools of different fabrics",
                  cluster.name, None,
                  f"engine {engine.name}'s members match different pools, but those pools declare different "
                  f"fabrics: the {first.role} fits pool {first.pool.name} ({_fabric(first.pool)}), the "
                  f"{second.role} pool {second.pool.name} ({_fabric(second.pool)}); a gang spans one fabric",
                  "give the pools the same fabric, or add a pool that can host the whole engine")


def _fabric(pool: PoolView) -> str:
    return "no fabric" if pool.fabric == str(FabricType.NONE) else f"fabric {pool.fabric}"


def _member_without_pool(engine: Engine, cluster: ClusterView, claiming: list[list[MemberOption]]) -> Reason | None:
    """When one member of a gang can claim on some pool and the other on none, the engine can
    neither run on one pool nor split: say which member had no pool."""
    if len(engine.members) != 2 or any(member.node_selector is None for member in engine.members):
        return None
    placed = [(member, options) for member, options in zip(engine.members, claiming, strict=True) if options]
    if len(placed) != 1:
        return None
    (have, options), = placed
    missing = next(member for member in engine.members if member is not have)
    pools = ", ".join(option.pool.name for option in options)
    return Reason(Code.NO_POOL_FOR_MEMBER, f"had no pool for the {missing.role} of a split engine", cluster.name, None,
                  f"engine {engine.name}: the {have.role} can claim on pool(s) {pools}, but the {missing.role} "
                  "matches no pool of the cluster, so the engine can neither run on one pool nor split",
                  f"relax the {missing.role}'s device request or add a pool whose class satisfies it")


def capacity_reasons(options: EngineOptions, trial: Trial, holders: Callable[[PoolKey], dict[str, int]]) -> list[Reason]:
    """Why each structurally possible option does not fit the ledger (for explain)."""
    reasons: list[Reason] = []
    for option in (*options.single, *options.split):
        for pool_key, nodes in sorted(option.needs().items()):
            free = trial.free(pool_key)
            if free < nodes:
                cluster, pool = pool_key
                used = ", ".join(f"{d} ({n})" for d, n in holders(pool_key).items()) or "nobody"
                split = sorted({m.pool.name for m in option.members})
                where = f" (split over {'+'.join(split)})" if len(split) > 1 else ""
                reasons.append(Reason(Code.INSUFFICIENT_NODES,
                                      f"had too few free nodes (needs {nodes}, has {max(free, 0)})", cluster, pool,
                                      f"the engine needs {nodes} node(s) of pool {pool}{where}, "
                                      f"{max(free, 0)} free; held by {used}",
                                      f"raise the pool's maxNodeCount by {nodes - max(free, 0)} or free nodes",
                                      shortfall=nodes - max(free, 0)))
    return reasons

