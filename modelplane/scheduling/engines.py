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

Options are tried in the platform team's pool order, single pools first; the first that fits wins.
Greedy across engines of a replica (each takes the first option that fits what earlier engines
left): it can wrongly reject a replica, never overcommit.

Where an engine can run depends only on its `Shape`: per member, the classes it matches, the
classes it claims a DRA device on, and its cost. Engines of one shape (a fleet asks for the same
hardware many times) share their `Options` on each cluster, worked out once per run; what the
members claim (the requests a placement carries) is looked up only for the option a replica takes,
and why a pool cannot host an engine only when `explain` asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from modelplane.api import Engine, FabricType, Role
from modelplane.scheduling.ledger import PoolKey, Trial
from modelplane.scheduling.match import Matcher, MemberMatch, Miss
from modelplane.scheduling.placement import MemberPlacement
from modelplane.scheduling.reasons import Code, Reason
from modelplane.scheduling.snapshot import ClusterView, DeviceView, PoolView


@dataclass(frozen=True)
class Shape:
    """What decides where an engine can run, member by member (in the engine's member order)."""

    matches: tuple[frozenset[str], ...]
    """Among the classes some member claims on, those on which this member matches (claiming or not)."""
    claims: tuple[frozenset[str], ...]
    """The classes on which the member matches and claims a DRA device."""
    nodes: tuple[int, ...]
    """The member's cost where it claims: pods x copies."""

    @cached_property
    def hosts(self) -> dict[str, tuple[tuple[int, ...], int, bool]]:
        """Per class some member claims on: the members that claim there, what the whole engine
        costs on one pool of it, and whether one pool of it can host the whole engine."""
        hosts = {}
        for name in frozenset().union(*self.claims):
            claimers = tuple(index for index, classes in enumerate(self.claims) if name in classes)
            whole = all(name in classes for classes in self.matches)
            hosts[name] = (claimers, sum(self.nodes[index] for index in claimers), whole)
        return hosts


def shape_of(engine: Engine, matcher: Matcher, classes: dict[str, tuple[DeviceView, ...]]) -> Shape:
    """The engine's shape over the fleet's classes. Only classes some member can claim on can host
    it (alone or split), so members are matched against those alone (`usable_classes` narrows them
    down without matching)."""
    claims = []
    for member in engine.members:
        usable = matcher.usable_classes(member.node_selector, classes)
        claims.append(frozenset(name for name in usable if _claims(matcher.match_devices(member.node_selector, name,
                                                                                          classes[name]))))
    hosting = frozenset().union(*claims)
    matches = tuple(frozenset(name for name in hosting
                              if isinstance(matcher.match_devices(member.node_selector, name, classes[name]),
                                            MemberMatch))
                    for member in engine.members)
    return Shape(matches, tuple(claims), tuple(member.pods * engine.copies for member in engine.members))


def _claims(match: MemberMatch | Miss) -> bool:
    return isinstance(match, MemberMatch) and match.claims_dra


class Option(NamedTuple):
    pools: tuple[PoolView, ...]
    """The pool of each member, in member order."""
    needs: tuple[tuple[PoolKey, int], ...]
    """Nodes per pool."""


@dataclass(frozen=True)
class Options:
    """An engine shape's options on one cluster, and what explain needs to say why there are none."""

    single: tuple[Option, ...]
    split: tuple[Option, ...]
    blocked: tuple[PoolView, PoolView] | None
    """The first pairing a fabric boundary blocked."""
    claiming: tuple[tuple[PoolView, ...], ...]
    """Per member, the pools it claims on by itself."""


_NONE = {members: Options((), (), None, ((),) * members) for members in (1, 2)}
"""The options of a shape on a cluster where no member claims on any pool (shared: they are many)."""


def options_of(shape: Shape, cluster: ClusterView) -> Options:
    single: list[Option] = []
    claiming: list[list[PoolView]] = [[] for _ in shape.nodes]
    hosts = shape.hosts
    for pool in cluster.pools:
        host = hosts.get(pool.class_name)
        if host is None:
            continue
        claimers, cost, whole = host
        for index in claimers:
            claiming[index].append(pool)
        if whole:
            single.append(Option((pool,) * len(shape.nodes), ((pool.key, cost),)))
    split: list[Option] = []
    blocked = None
    if len(shape.nodes) == 2:
        for first in claiming[0]:
            for second in claiming[1]:
                if first.name == second.name:
                    continue
                if first.fabric != second.fabric:
                    blocked = blocked or (first, second)
                    continue
                split.append(Option((first, second), ((first.key, shape.nodes[0]), (second.key, shape.nodes[1]))))
    if not (single or split or blocked or any(claiming)):
        return _NONE[len(shape.nodes)]
    return Options(tuple(single), tuple(split), blocked, tuple(tuple(pools) for pools in claiming))


def choose(options: Options, trial: Trial) -> Option | None:
    for option in options.single:
        if trial.fits(option.needs):
            return option
    for option in options.split:
        if trial.fits(option.needs):
            return option
    return None


class Placements:
    """Where each member of an engine runs, as the placement document says it: built once per
    (member, pool), since every replica on that pool carries the same claim."""

    def __init__(self, matcher: Matcher):
        self.matcher = matcher
        self._made: dict[tuple[int, str, str], MemberPlacement] = {}
        self._engines: dict[tuple[int, tuple[PoolKey, ...]], dict[Role, MemberPlacement]] = {}

    def of(self, engine: Engine, option: Option) -> dict[Role, MemberPlacement]:
        """Shared by every replica of the engine on the same pools (never mutated)."""
        key = (id(engine), tuple(pool.key for pool in option.pools))
        found = self._engines.get(key)
        if found is None:
            found = self._engines[key] = {member.role: self._member(engine, index, pool) for index, (member, pool)
                                          in enumerate(zip(engine.members, option.pools, strict=True))}
        return found

    def _member(self, engine: Engine, index: int, pool: PoolView) -> MemberPlacement:
        member = engine.members[index]
        key = (id(member), pool.name, pool.class_name)
        made = self._made.get(key)
        if made is None:
            match = self.matcher.match_class(member.node_selector, pool)
            assert isinstance(match, MemberMatch), "an option only holds pools its members match"
            nodes = member.pods * engine.copies if match.claims_dra else 0
            made = self._made[key] = MemberPlacement.model_construct(pool=pool.name, nodes=nodes,
                                                                     requests=match.claimed())
        return made


def misses(engine: Engine, options: Options, cluster: ClusterView, matcher: Matcher) -> tuple[Reason, ...]:
    """Why each pool cannot host the whole engine whatever the capacity, and why the members could
    not split (for explain)."""
    reasons = tuple(miss.at(pool) for pool in sorted(cluster.pools, key=lambda p: p.name)
                    if (miss := pool_miss(engine, pool, matcher)) is not None)
    blocked = split_blocked(engine, options, cluster)
    return (*reasons, blocked) if blocked else reasons


def pool_miss(engine: Engine, pool: PoolView, matcher: Matcher) -> Miss | None:
    """The first member that misses the pool's class, or that nothing would be claimed there."""
    claims = False
    for member in engine.members:
        match = matcher.match_class(member.node_selector, pool)
        if isinstance(match, Miss):
            return match
        claims = claims or (match.claims_dra and member.node_selector is not None)
    return None if claims else _synthetic_only(engine.name, pool)


def _synthetic_only(engine: str, pool: PoolView) -> Miss:
    return Miss(Code.ONLY_SYNTHETIC, "matched only synthetic devices (nothing to claim)",
                lambda: (f"every request of engine {engine} resolves to a Synthetic device of class "
                         f"{pool.class_name}, so its pods would claim no GPU",
                         "request a device the class publishes with claim: DRA"))


def split_blocked(engine: Engine, options: Options, cluster: ClusterView) -> Reason | None:
    """Why the members could not split: a fabric between their pools, or a member with no pool."""
    if options.split:
        return None
    if options.blocked is not None:
        first, second = options.blocked
        return Reason(Code.FABRIC_MISMATCH, "could split the engine only across pools of different fabrics",
                      cluster.name, None,
                      f"engine {engine.name}'s members match different pools, but those pools declare different "
                      f"fabrics: the {engine.members[0].role} fits pool {first.name} ({_fabric(first)}), the "
                      f"{engine.members[1].role} pool {second.name} ({_fabric(second)}); a gang spans one fabric",
                      "give the pools the same fabric, or add a pool that can host the whole engine")
    if options.single:
        return None
    return _member_without_pool(engine, options, cluster)


def _fabric(pool: PoolView) -> str:
    return "no fabric" if pool.fabric == str(FabricType.NONE) else f"fabric {pool.fabric}"


def _member_without_pool(engine: Engine, options: Options, cluster: ClusterView) -> Reason | None:
    """When one member of a gang can claim on some pool and the other on none, the engine can
    neither run on one pool nor split: say which member had no pool."""
    if len(engine.members) != 2 or any(member.node_selector is None for member in engine.members):
        return None
    placed = [(member, pools) for member, pools in zip(engine.members, options.claiming, strict=True) if pools]
    if len(placed) != 1:
        return None
    (have, pools), = placed
    missing = next(member for member in engine.members if member is not have)
    return Reason(Code.NO_POOL_FOR_MEMBER, f"had no pool for the {missing.role} of a split engine", cluster.name, None,
                  f"engine {engine.name}: the {have.role} can claim on pool(s) {', '.join(p.name for p in pools)}, "
                  f"but the {missing.role} matches no pool of the cluster, so the engine can neither run on one "
                  "pool nor split", f"relax the {missing.role}'s device request or add a pool whose class satisfies it")


def capacity_reasons(options: Options, trial: Trial, holders: Callable[[PoolKey], dict[str, int]]) -> list[Reason]:
    """Why each structurally possible option does not fit the ledger (for explain)."""
    reasons: list[Reason] = []
    for option in (*options.single, *options.split):
        for pool_key, nodes in sorted(option.needs):
            free = trial.free(pool_key)
            if free < nodes:
                cluster, pool = pool_key
                used = ", ".join(f"{d} ({n})" for d, n in holders(pool_key).items()) or "nobody"
                split = sorted({p.name for p in option.pools})
                where = f" (split over {'+'.join(split)})" if len(split) > 1 else ""
                reasons.append(Reason(Code.INSUFFICIENT_NODES,
                                      f"had too few free nodes (needs {nodes}, has {max(free, 0)})", cluster, pool,
                                      f"the engine needs {nodes} node(s) of pool {pool}{where}, "
                                      f"{max(free, 0)} free; held by {used}",
                                      f"raise the pool's maxNodeCount by {nodes - max(free, 0)} or free nodes",
                                      shortfall=nodes - max(free, 0)))
    return reasons
