"""The fleet-wide ledger: capacity and use per pool, across every deployment.

Rule 5, Capacity: counted in nodes, a pool holds `maxNodeCount` nodes if it autoscales, else
`nodeCount`. Use is what the pods put on the pool: whole-node pods, and pods that share nodes by the
devices each claims of each kind; a pool's used nodes are `packing.need` of its pods, the fewest
nodes on which every pod lands whatever node the cluster's scheduler picks (the rule and its proof
are in `packing.py`). A charge is admitted only when the pool's need stays within its capacity.

A replica is charged only as a whole, after a trial that never touched the ledger (`Trial` keeps
its pending charges apart), so a partial placement can never leak and no pool is ever
overcommitted. A pool's need only grows during a run (adding pods never lowers it), which is what
lets the scheduler stop trying a cluster where an engine no longer fits. The ledger also remembers
what each deployment holds on each pool, for `explain`. Every check touches only the pools it names.

A ledger may carry a `Watch` (capacity search, `rerun.py`): each check notes the pools that admitted
its use and the pool that refused it, if one did, with the use it asked each for. A check stops at
the first pool that refuses, so those are the only pools whose load or capacity could change its
answer.

The capacity search's reruns charge the recorded stages they take over with `defer` and `settle`
the pools before reading them: a pool's need is computed once for the charges of many stages
(on 100 x 1,000, 44% fewer `Load.add` calls; `rerun.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplane.invariants import InvariantError
from modelplane.scheduling.packing import Sizes, Use, need, need_of_parts, shared_need, surge_need
from modelplane.scheduling.snapshot import Snapshot

PoolKey = tuple[str, str]  # cluster, pool
Needs = tuple[tuple[PoolKey, Use], ...]  # what an option puts on each pool


class Load:
    """One pool's pods and the nodes they need (kept up to date on every charge)."""

    __slots__ = ("capacity", "per_node", "surge", "whole", "shared", "sharing", "shared_need", "need", "_needs")

    def __init__(self, capacity: int, per_node: Sizes, surge: bool = False):
        self.capacity = capacity
        self.per_node = per_node
        self.surge = surge
        """Whether the pool keeps room for a rollout's surge pod (`packing.surge_need`)."""
        self.whole = 0
        self.shared: dict[Sizes, int] = {}
        self.sharing = 0
        """Shared pods."""
        self.shared_need = 0
        self.need = 0
        self._needs: dict[Use, int] = {}
        """`need_with` of shared pods until the next charge: a replica's engines try the same pools
        with the same use again and again."""

    def need_with(self, use: Use) -> int:
        whole = self.whole + use.whole
        if not use.shared and not self.surge:
            return need_of_parts(whole, self.sharing, self.shared_need)
        found = self._needs.get(use)
        if found is None:
            merged = dict(self.shared)
            for sizes, pods in use.shared:
                merged[sizes] = merged.get(sizes, 0) + pods
            found = self._needs[use] = (surge_need if self.surge else need)(self.per_node, whole, merged)
        return found

    def copy(self, capacity: int) -> Load:
        """This load with `capacity` (the memo too: a pool's need does not depend on its capacity)."""
        other = Load(capacity, self.per_node, self.surge)
        other.whole, other.shared, other.sharing = self.whole, dict(self.shared), self.sharing
        other.shared_need, other.need, other._needs = self.shared_need, self.need, dict(self._needs)
        return other

    def add(self, use: Use) -> None:
        if self.surge or not use.shared:
            self.need = self.need_with(use)
        self.whole += use.whole
        if use.shared:
            shared = self.shared
            for sizes, pods in use.shared:
                shared[sizes] = shared.get(sizes, 0) + pods
                self.sharing += pods
            self.shared_need = shared_need(self.per_node, shared)
            if not self.surge:
                # from the part just computed, not `need_with`, which would compute it once more: on
                # 100 x 1,000 the capacity search charges the stages a rerun takes over unchecked
                self.need = need_of_parts(self.whole, self.sharing, self.shared_need)
        self._needs.clear()

    def gather(self, uses: list[Use]) -> None:
        """`add` each of `uses`, the pool's need computed once (it depends only on the pods)."""
        if len(uses) == 1:
            self.add(uses[0])
            return
        whole = 0
        shared: dict[Sizes, int] = {}
        for use in uses:
            whole += use.whole
            for sizes, pods in use.shared:
                shared[sizes] = shared.get(sizes, 0) + pods
        self.add(Use(whole, tuple(sorted(shared.items()))))


_EMPTY = Load(0, ())


class Watch:
    """Every read of a pool by a run's checks since the run last emptied it, in order: the pool,
    the use asked of it (the trial's pending charges included), the answer, and how many replicas
    the run had committed (`commits`, the run's list) when it was made."""

    __slots__ = ("reads", "commits")

    def __init__(self) -> None:
        self.reads: list[tuple[PoolKey, Use, bool, int]] = []
        self.commits: list[object] = []

    def read(self, pool: PoolKey, use: Use, fits: bool) -> None:
        self.reads.append((pool, use, fits, len(self.commits)))


class Ledger:
    def __init__(self, snapshot: Snapshot, capacities: dict[PoolKey, int] | None = None):
        """`capacities` replaces the snapshot's capacity of the pools it names."""
        self.loads = {key: Load(capacity, per_node, surge) for key, capacity, per_node, surge in snapshot.pool_list}
        for key, capacity in (capacities or {}).items():
            self.loads[key].capacity = capacity
        self._holders: dict[PoolKey, dict[str, Use]] = {}
        self._sorted_holders: dict[PoolKey, dict[str, Use]] = {}
        self._shared: set[PoolKey] = set()
        """The pools whose `Load` and holders another ledger may hold too (`copy`): copied before
        the first charge."""
        self.watch: Watch | None = None
        self._pending: dict[PoolKey, list[Use]] = {}
        """`defer`red charges not in the pools' loads yet (`settle`)."""

    def copy(self, capacities: dict[PoolKey, int]) -> Ledger:
        """A ledger with this one's charges, `capacities` replacing the capacity of the pools it
        names. Copy on write: both ledgers hold the same `Load` of every other pool until either
        charges it, so a copy costs a dict of the pools, not a load per pool (the capacity search
        copies a checkpoint per candidate plan, `rerun.py`)."""
        self.settle()
        other = Ledger.__new__(Ledger)
        other.loads = dict(self.loads)
        other._holders = dict(self._holders)
        other._sorted_holders = dict(self._sorted_holders)
        other.watch = None
        other._pending = {}
        self._shared = set(self.loads)
        other._shared = set(self.loads)
        for pool, capacity in capacities.items():
            if capacity != other.loads[pool].capacity:
                other._own(pool, capacity)
        return other

    def _own(self, pool: PoolKey, capacity: int | None = None) -> None:
        """Give the pool a `Load` and holders of its own, before changing them."""
        self._shared.discard(pool)
        load = self.loads[pool]
        self.loads[pool] = load.copy(load.capacity if capacity is None else capacity)
        held = self._holders.get(pool)
        if held is not None:
            self._holders[pool] = dict(held)

    def capacity(self, pool: PoolKey) -> int:
        return self.loads.get(pool, _EMPTY).capacity

    def used(self, pool: PoolKey) -> int:
        """The nodes the pool's pods need."""
        return self.loads.get(pool, _EMPTY).need

    def free(self, pool: PoolKey) -> int:
        return self.capacity(pool) - self.used(pool)

    def fits(self, charges: dict[PoolKey, Use]) -> bool:
        watch = self.watch
        for pool, use in charges.items():
            fits = _fits(self.loads.get(pool, _EMPTY), use)
            if watch is not None:
                watch.read(pool, use, fits)
            if not fits:
                return False
        return True

    def admits(self, pool: PoolKey, use: Use) -> bool:
        """Whether the pool has room for `use` on top of its pods (no `Watch` notes it)."""
        return _fits(self.loads.get(pool, _EMPTY), use)

    def charge(self, deployment: str, charges: dict[PoolKey, Use]) -> None:
        if not all(_fits(self.loads.get(pool, _EMPTY), use) for pool, use in charges.items()):
            raise InvariantError(f"charging {deployment} {charges} would overcommit a pool: the planner charges only "
                                 "what fits")
        self.restore(deployment, charges)

    def restore(self, deployment: str, charges: dict[PoolKey, Use]) -> None:
        """Charge what a recorded plan charged at this point with no more capacity than this ledger
        has (`rerun.py`): it fitted then, so it fits now, and is not checked again."""
        for pool, use in charges.items():
            if use.whole or use.shared:
                self._hold(deployment, pool, use)
                self.loads[pool].add(use)

    def defer(self, deployment: str, charges: dict[PoolKey, Use]) -> None:
        """`restore`, the loads of the pools left as they are until `settle`: the capacity search
        takes over hundreds of recorded stages per rerun and reads few of their pools before the
        next stage it plans (`rerun.py`), so a pool's need is computed once for all the charges
        of the stages in between instead of once per stage. Holders are kept at once. Every read
        of a pool with deferred charges (`fits`, `admits`, a `Trial`, `used`, ...) must come after
        `settle` of that pool: the ledger does not do it itself, keeping the checks as they are."""
        pending = self._pending
        for pool, use in charges.items():
            if use.whole or use.shared:
                self._hold(deployment, pool, use)
                uses = pending.get(pool)
                if uses is None:
                    pending[pool] = [use]
                else:
                    uses.append(use)

    def _hold(self, deployment: str, pool: PoolKey, use: Use) -> None:
        """A charge taken over (`restore`, `defer`), but for the pool's load: the pool made its own
        first, then `use` added to what `deployment` holds there."""
        if pool in self._shared:
            self._own(pool)
        held = self._holders.setdefault(pool, {})
        prior = held.get(deployment)
        # a stage's deployment rarely holds the pool already (only what retain kept): a `Use` (always
        # sorted and merged) added to nothing is the same `Use`, so skip the sum (first 30 short
        # deployments of 100 x 1,000: 589k of the 644k `Use.__add__` calls were here)
        held[deployment] = use if prior is None else prior + use
        self._sorted_holders.pop(pool, None)

    def settle(self, pools: Iterable[PoolKey] | None = None) -> None:
        """Put the `defer`red charges of `pools` (of every pool when None) in their loads."""
        pending = self._pending
        if not pending:
            return
        if pools is None:
            for pool, uses in pending.items():
                self.loads[pool].gather(uses)
            pending.clear()
        else:
            for pool in pools:
                uses = pending.pop(pool, None)
                if uses is not None:
                    self.loads[pool].gather(uses)

    def holders(self, pool: PoolKey) -> dict[str, Use]:
        """What each deployment holds on the pool, sorted by deployment (kept until the pool's next charge)."""
        found = self._sorted_holders.get(pool)
        if found is None:
            found = self._sorted_holders[pool] = dict(sorted(self._holders.get(pool, {}).items()))
        return found


def _fits(load: Load, use: Use) -> bool:
    return (not use.whole and not use.shared) or load.need_with(use) <= load.capacity


class Trial:
    """Charges pending on top of the ledger while the engines of one replica are placed."""

    __slots__ = ("ledger", "charges")

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.charges: dict[PoolKey, Use] = {}

    def capacity(self, pool: PoolKey) -> int:
        return self.ledger.capacity(pool)

    def need(self, pool: PoolKey, use: Use) -> int:
        """The nodes the pool would need with the pending charges and `use`."""
        pending = self.charges.get(pool)
        return self.ledger.loads.get(pool, _EMPTY).need_with(use if pending is None else pending + use)

    def fits(self, needs: Needs) -> bool:
        loads, charges, watch = self.ledger.loads, self.charges, self.ledger.watch
        for pool, use in needs:
            pending = charges.get(pool)
            if pending is not None:
                use = pending + use
            fits = _fits(loads.get(pool, _EMPTY), use)
            if watch is not None:
                watch.read(pool, use, fits)
            if not fits:
                return False
        return True

    def add(self, needs: Needs) -> None:
        for pool, use in needs:
            pending = self.charges.get(pool)
            self.charges[pool] = use if pending is None else pending + use
