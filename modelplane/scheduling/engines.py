"""Engines on one cluster: which pool(s) can run each member, and which option fits the ledger.

Rule 3, Engines (the seeds: "preferring one pool for the whole engine and splitting members across pools
only when no pool satisfies them all"): prefer one pool that matches every member of the engine and
has room for all of them; split the members across pools of the same cluster only when no single
pool can host the whole engine, and never across pools of different fabrics (type plus InfiniBand
fabric id; pools without a fabric share the cluster's default network, so they pair). Every member
is matched against every pool, so a Leader that fits only pool A and a Worker that fits only pool B
split over A and B. A member that claims no device goes to the pool of a member that does (a
coordinator-only Leader rides with its Workers), so only claiming members are split. An engine that
claims no DRA device on a pool cannot run there (its pods would have nothing to claim).

What a member costs (the Capacity rule, `ledger.py`): pods x copies pods on its pool (pods = 1 for Standalone/Leader,
`worker.nodes` for a Worker), nothing if it claims no DRA device. Each pod holds a whole node, or on
a `Shared` pool shares nodes when it claims only part of a node's devices (`member_use`; how many
nodes shared pods need is `packing.py`'s rule).

Rule 4, Pool choice: filter, then score (Karmada and Kueue place this way): an option passes the filter when the ledger
has room for it; among those that pass, the lowest `Score` wins (single pools before splits, the
Engines rule). Options are sorted by score once per shape and cluster, so the first that fits is the best.
Greedy across engines of a replica (each takes the best option that fits what earlier engines
left): it can wrongly reject a replica, never overcommit.

Where an engine can run depends only on its `Shape`: per member, the classes it matches, the
classes it claims a DRA device on, and its cost. Engines of one shape (a fleet asks for the same
hardware many times) share their `Options` on each cluster, worked out once per run; what the
members claim (the requests a placement carries) is looked up only for the option a replica takes,
and why a pool cannot host an engine only when `explain` asks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import NamedTuple

from modelplane.api import Claim, Engine, FabricType, Member, Role
from modelplane.invariants import InvariantError
from modelplane.scheduling.ledger import Needs, PoolKey, Trial
from modelplane.scheduling.match import Matcher, MemberMatch, Miss
from modelplane.scheduling.packing import NOTHING, Sizes, Use
from modelplane.scheduling.placement import DeviceUse, MemberPlacement
from modelplane.scheduling.reasons import Code, Reason
from modelplane.scheduling.snapshot import ClusterView, DeviceView, PoolView, Snapshot


Demand = tuple[str, Sizes, bool]
"""On one class: its name, the devices one pod claims of each of its kinds, and whether that is
certain (`MemberMatch.pinned`)."""


@dataclass(frozen=True)
class Shape:
    """What decides where an engine can run, member by member (in the engine's member order)."""

    matches: tuple[frozenset[str], ...]
    """Among the classes some member claims on, those on which this member matches (claiming or not)."""
    claims: tuple[frozenset[str], ...]
    """The classes on which the member matches and claims a DRA device."""
    pods: tuple[int, ...]
    """The member's pods: pods x copies."""
    gang: bool
    """A Leader + Worker engine: its pods keep whole nodes."""
    demands: tuple[tuple[Demand, ...], ...]
    """Per member, on each class it claims on (by name)."""

    @cached_property
    def hosts(self) -> dict[str, tuple[tuple[int, ...], bool]]:
        """Per class some member claims on: the members that claim there, and whether one pool of
        it can host the whole engine."""
        hosts = {}
        for name in frozenset().union(*self.claims):
            claimers = tuple(index for index, classes in enumerate(self.claims) if name in classes)
            hosts[name] = (claimers, all(name in classes for classes in self.matches))
        return hosts

    @cached_property
    def _demand(self) -> tuple[dict[str, Demand], ...]:
        return tuple({demand[0]: demand for demand in demands} for demands in self.demands)

    # What an option puts on its pools and its score depend only on the pools' classes and sharing
    # (and the score on their order), so they are worked out once per run, not once per cluster.
    @cached_property
    def _uses(self) -> dict[tuple[int, str, bool], Use]:
        return {}

    @cached_property
    def _singles(self) -> dict[tuple[str, bool], Use]:
        return {}

    @cached_property
    def _scores(self) -> dict[tuple[bool, tuple[str, ...]], Score]:
        return {}

    def use(self, index: int, pool: PoolView) -> Use:
        """What member `index` puts on `pool` (nothing where it claims nothing)."""
        key = (index, pool.class_name, pool.shared)
        found = self._uses.get(key)
        if found is None:
            demand = self._demand[index].get(pool.class_name)
            found = self._uses[key] = NOTHING if demand is None else member_use(self.pods[index], self.gang,
                                                                                 demand[1], demand[2], pool)
        return found

    def single(self, pool: PoolView) -> Use:
        """What the whole engine puts on `pool`, one pool that hosts every member."""
        key = (pool.class_name, pool.shared)
        found = self._singles.get(key)
        if found is None:
            found = NOTHING
            for index in self.hosts[pool.class_name][0]:
                found += self.use(index, pool)
            self._singles[key] = found
        return found

    def score(self, pools: tuple[PoolView, ...]) -> Score:
        """`score(pools, self.claimed(pools))`: options on other pools of the same classes differ
        only in the pools' order."""
        one = pools[0] is pools[-1]
        key = (one, tuple(pool.class_name for pool in pools))
        found = self._scores.get(key)
        if found is None:
            found = self._scores[key] = score(pools, self.claimed(pools))
        order = (pools[0].order,) if one else tuple(pool.order for pool in pools)
        return found if found.order == order else Score(found.devices, found.memory, found.price, order)

    def claimed(self, pools: tuple[PoolView, ...]) -> list[tuple[PoolView, Sizes]]:
        """Each member's pool and the devices one of its pods claims there (members that claim)."""
        return [(pool, demand[1]) for index, pool in enumerate(pools)
                if (demand := self._demand[index].get(pool.class_name)) is not None]


def shape_key(engine: Engine, matcher: Matcher) -> Hashable:
    """Everything `shape_of` reads of an engine: equal keys, equal shapes. Engines whose selectors
    differ only in what no device of the fleet tells apart (a memory floor between the same two
    device sizes) share a key: the varied 1,000 x 10,000 benchmark fleet's 11,999 engines have 343
    shapes, and working each engine's out cost a cold place 1.4 of its 6.4-6.7 CPU s (2026-11-27)."""
    return (tuple(matcher.signature(member.node_selector) for member in engine.members),
            tuple(member.pods * engine.copies for member in engine.members), engine.multi_node)


def shape_of(engine: Engine, matcher: Matcher, snapshot: Snapshot) -> Shape:
    """The engine's shape over the fleet's classes. Only classes some member can claim on can host
    it (alone or split), so members are matched against those alone (`usable_classes` narrows them
    down without matching)."""
    classes = snapshot.classes
    claims, demands = [], []
    for member in engine.members:
        usable = matcher.usable_classes(member.node_selector)
        found = {name: match for name in usable
                 if _claims(match := matcher.match_devices(member.node_selector, name, classes[name]))}
        claims.append(frozenset(found))
        demands.append(tuple((name, match.sizes(_kinds(classes[name])), match.pinned)
                             for name, match in sorted(found.items()) if isinstance(match, MemberMatch)))
    hosting = frozenset().union(*claims)
    matches = tuple(frozenset(name for name in hosting
                              if isinstance(matcher.match_devices(member.node_selector, name, classes[name]),
                                            MemberMatch))
                    for member in engine.members)
    return Shape(matches, tuple(claims), tuple(member.pods * engine.copies for member in engine.members),
                 engine.multi_node, tuple(demands))


def _kinds(devices: tuple[DeviceView, ...]) -> tuple[DeviceView, ...]:
    return tuple(device for device in devices if device.claim is Claim.DRA)


def _claims(match: MemberMatch | Miss) -> bool:
    return isinstance(match, MemberMatch) and match.claims_dra


def member_use(pods: int, gang: bool, sizes: Sizes, pinned: bool, pool: PoolView) -> Use:
    """A member's pods on a pool: shared when it may share nodes there (`whole_node_reason`)."""
    if whole_node_reason(gang, sizes, pinned, pool) is None:
        return Use(0, ((sizes, pods),))
    return Use(pods)


def whole_node_reason(gang: bool, sizes: Sizes, pinned: bool, pool: PoolView) -> str | None:
    """Why a pod that claims `sizes` keeps a node to itself on `pool`, or None when it may share."""
    if not pool.shared:
        return f"pool {pool.name} is sharing: Exclusive"
    if gang:
        return "a Leader + Worker gang keeps a node per pod"
    if not pinned:
        return "a request can take more than one kind of device of the class"
    full = [kind.name for kind, size in zip(pool.kinds, sizes) if size == kind.count]
    if full:
        return f"it claims every {full[0]} of a node"
    return None


class Score(NamedTuple):
    """How good an option is; lower wins, compared part by part (a tuple):

    "prefer the smallest fitting hardware (fewest devices per node that satisfy the request, then
    least device memory above what the selectors need), then the cheapest when classes are priced,
    then the platform team's order."

    What the selectors need is the same for every pool an engine could use, so least memory above it
    is least memory. Prices compare within a currency; priced pools come before unpriced ones.
    """

    devices: int
    """Devices per node of the kinds the engine claims (each pool's kind once)."""
    memory: Decimal
    """Bytes of memory of those devices, one of each."""
    price: tuple[bool, str, Decimal]
    """(unpriced, currency, per node per hour) summed over the option's pools."""
    order: tuple[int, ...]
    """The pools' places in the cluster's list."""


def score(pools: tuple[PoolView, ...], claimed: list[tuple[PoolView, Sizes]]) -> Score:
    """The score of an option on `pools` whose members claim `claimed` (pool, devices per pod): the
    one place the choice between pools is made."""
    kinds = list({(pool.name, kind.name): kind for pool, sizes in claimed
                  for kind, size in zip(pool.kinds, sizes) if size}.values())
    distinct = tuple({pool.key: pool for pool in pools}.values())
    prices = [pool.pricing for pool in distinct]
    currencies = {p.currency for p in prices if p is not None}
    if None in prices or len(currencies) != 1:
        price = (True, "", Decimal(0))
    else:
        price = (False, currencies.pop(), sum((p.amount for p in prices if p is not None), Decimal(0)))
    return Score(sum(kind.count for kind in kinds), sum((kind.memory for kind in kinds), Decimal(0)), price,
                 tuple(pool.order for pool in distinct))


class Option(NamedTuple):
    pools: tuple[PoolView, ...]
    """The pool of each member, in member order."""
    needs: Needs
    """What the engine puts on each pool."""
    score: Score


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
    claiming: list[list[PoolView]] = [[] for _ in shape.pods]
    hosts = shape.hosts
    for pool in cluster.pools:
        host = hosts.get(pool.class_name)
        if host is None:
            continue
        claimers, whole = host
        for index in claimers:
            claiming[index].append(pool)
        if whole:
            pools = (pool,) * len(shape.pods)
            single.append(Option(pools, ((pool.key, shape.single(pool)),), shape.score(pools)))
    split: list[Option] = []
    blocked = None
    if len(shape.pods) == 2:
        for first in claiming[0]:
            for second in claiming[1]:
                if first.name == second.name:
                    continue
                if first.fabric != second.fabric:
                    blocked = blocked or (first, second)
                    continue
                split.append(Option((first, second), ((first.key, shape.use(0, first)), (second.key, shape.use(1, second))),
                                    shape.score((first, second))))
    if not (single or split or blocked or any(claiming)):
        return _NONE[len(shape.pods)]
    return Options(tuple(sorted(single, key=_by_score)), tuple(sorted(split, key=_by_score)), blocked,
                   tuple(tuple(pools) for pools in claiming))


def _by_score(option: Option) -> Score:
    return option.score


def choose(options: Options, trial: Trial) -> Option | None:
    """Filter, then score: the best-scored option the ledger has room for (options are sorted)."""
    for option in options.single:
        if trial.fits(option.needs):
            return option
    for option in options.split:
        if trial.fits(option.needs):
            return option
    return None


class Placed(NamedTuple):
    """One member on one pool whose class it matches: what it costs there and what the document says."""

    use: Use
    """Its pods, NOTHING when it claims no DRA device there."""
    claims: bool
    placement: MemberPlacement


class Placements:
    """Where each member of an engine runs, as the placement document says it, and what it costs:
    worked out once per (member, pool), since every replica on that pool carries the same claim.

    The memos are keyed by the engine's or member's identity (hashing a model by value would cost
    more than the work saved) and hold the object itself, so its identity cannot be reused by
    another object while the memo lives."""

    def __init__(self, matcher: Matcher):
        self.matcher = matcher
        self._made: dict[tuple[int, str, str, bool, bool], tuple[Member, Placed | None]] = {}
        self._engines: dict[tuple[int, tuple[PoolKey, ...]], tuple[Engine, dict[Role, MemberPlacement]]] = {}
        self._devices: dict[tuple[str, Sizes], tuple[DeviceUse, ...]] = {}

    def of(self, engine: Engine, pools: tuple[PoolView, ...]) -> dict[Role, MemberPlacement]:
        """Where the engine's members run on `pools` (an option's, in member order); shared by every
        replica of the engine on the same pools (never mutated)."""
        key = (id(engine), tuple(pool.key for pool in pools))
        held = self._engines.get(key)
        if held is not None:
            return held[1]
        found: dict[Role, MemberPlacement] = {}
        self._engines[key] = (engine, found)
        for index, (member, pool) in enumerate(zip(engine.members, pools, strict=True)):
            placed = self.member(engine, index, pool)
            if placed is None:
                raise InvariantError(f"an option holds only pools its members match, but member {index} of "
                                     f"engine {engine.name} does not match pool {pool.key}")
            found[member.role] = placed.placement
        return found

    def member(self, engine: Engine, index: int, pool: PoolView) -> Placed | None:
        """The engine's `index`th member on `pool`, or None when it does not match the pool's class."""
        member = engine.members[index]
        key = (id(member), pool.name, pool.class_name, pool.shared, pool.surge)
        held = self._made.get(key)
        if held is not None:
            return held[1]
        match = self.matcher.match_class(member.node_selector, pool)
        made = None
        if isinstance(match, MemberMatch):
            use, devices = NOTHING, ()
            if match.claims_dra:
                sizes = match.sizes(pool.kinds)
                use = member_use(member.pods * engine.copies, engine.multi_node, sizes, match.pinned, pool)
                devices = self._devices.get((pool.class_name, sizes))
                if devices is None:
                    devices = self._devices[pool.class_name, sizes] = tuple(
                        DeviceUse.model_construct(device=kind.name, count=size, per_node=kind.count)
                        for kind, size in zip(pool.kinds, sizes) if size)
            made = Placed(use, match.claims_dra, MemberPlacement.trusted(
                pool=pool.name, nodes=use.whole, shared_pods=use.pods - use.whole, devices=devices,
                requests=match.claimed, surge=pool.surge and match.claims_dra))
        self._made[key] = (member, made)
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


def capacity_reasons(options: Options, trial: Trial, held: Callable[[PoolKey], str]) -> list[Reason]:
    """Why each structurally possible option does not fit the ledger (for explain); `held` says who
    holds a pool's nodes (`held_by`)."""
    reasons: list[Reason] = []
    for option in (*options.single, *options.split):
        for pool_key, use in sorted(option.needs, key=lambda need: need[0]):
            before, after, capacity = trial.need(pool_key, NOTHING), trial.need(pool_key, use), trial.capacity(pool_key)
            if after <= capacity:
                continue
            cluster, pool = pool_key
            free, adds = max(capacity - before, 0), after - before
            holders = held(pool_key)
            split = sorted({p.name for p in option.pools})
            where = f" (split over {'+'.join(split)})" if len(split) > 1 else ""
            if use.shared:
                sizes = use.shared[0][0]
                kinds = next(p.kinds for p in option.pools if p.key == pool_key)
                each = ", ".join(f"{size} of {kind.count} {kind.name}" for kind, size in zip(kinds, sizes) if size)
                detail = (f"the engine's pods would share nodes of pool {pool}{where} ({each} per pod); with the pods "
                          f"already there, every pod lands whatever node the cluster's scheduler picks only on "
                          f"{after} node(s), the pool has {capacity}; held by {holders}")
            else:
                detail = f"the engine needs {adds} node(s) of pool {pool}{where}, {free} free; held by {holders}"
                if adds > use.whole:
                    detail += ("; the pool's shared pods could each be on a different node (Kubernetes spreads "
                               "pods), so whole-node pods need nodes beside all of them")
            reasons.append(Reason(Code.INSUFFICIENT_NODES, f"had too few free nodes (needs {adds}, has {free})",
                                  cluster, pool, detail,
                                  f"raise the pool's maxNodeCount by {after - capacity} or free nodes",
                                  shortfall=after - capacity))
    return reasons


def held_by(holders: dict[str, Use]) -> str:
    """Who holds a pool's nodes, from the ledger's `holders`: `ns/a (2), ns/b (3 shared pod(s))`."""
    return ", ".join(f"{d} ({_held(u)})" for d, u in holders.items()) or "nobody"


def _held(use: Use) -> str:
    shared = use.pods - use.whole
    if not shared:
        return str(use.whole)
    return f"{use.whole} + {shared} shared pod(s)" if use.whole else f"{shared} shared pod(s)"
