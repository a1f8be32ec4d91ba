"""The fleet-wide ledger of nodes: capacity and use per pool, across every deployment.

Capacity is counted in nodes (rule 4): a pool holds `maxNodeCount` nodes if it autoscales, else
`nodeCount`. A replica is charged only as a whole, after a trial that never touched the ledger
(`Trial` keeps its pending charges apart), so a partial placement can never leak and no pool is
ever overcommitted. Free nodes only ever shrink during a run, which is what lets the scheduler
stop trying a cluster where an engine no longer fits. The ledger also remembers which deployment
holds which nodes, for `explain`. Every check touches only the pools it names.
"""

from __future__ import annotations

from collections import defaultdict

from modelplane.scheduling.snapshot import Snapshot

PoolKey = tuple[str, str]  # cluster, pool
Needs = tuple[tuple[PoolKey, int], ...]  # nodes per pool


class Ledger:
    def __init__(self, snapshot: Snapshot):
        self._capacity = {pool.key: pool.capacity for cluster in snapshot.clusters for pool in cluster.pools}
        self.free_nodes = dict(self._capacity)
        """Capacity minus use, per pool."""
        self._holders: dict[PoolKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._sorted_holders: dict[PoolKey, dict[str, int]] = {}

    def capacity(self, pool: PoolKey) -> int:
        return self._capacity.get(pool, 0)

    def free(self, pool: PoolKey) -> int:
        return self.free_nodes.get(pool, 0)

    def used(self, pool: PoolKey) -> int:
        return self.capacity(pool) - self.free(pool)

    def fits(self, charges: dict[PoolKey, int]) -> bool:
        return all(self.free(pool) >= nodes for pool, nodes in charges.items())

    def charge(self, deployment: str, charges: dict[PoolKey, int]) -> None:
        assert self.fits(charges), f"overcommit: {charges}"
        for pool, nodes in charges.items():
            if nodes:
                self.free_nodes[pool] -= nodes
                self._holders[pool][deployment] += nodes
                self._sorted_holders.pop(pool, None)

    def holders(self, pool: PoolKey) -> dict[str, int]:
        """Nodes of the pool held per deployment, sorted by deployment (kept until the pool's next charge)."""
        found = self._sorted_holders.get(pool)
        if found is None:
            found = self._sorted_holders[pool] = dict(sorted((d, n) for d, n in self._holders[pool].items() if n))
        return found


class Trial:
    """Charges pending on top of the ledger while the engines of one replica are placed."""

    __slots__ = ("ledger", "charges")

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.charges: dict[PoolKey, int] = {}

    def free(self, pool: PoolKey) -> int:
        return self.ledger.free(pool) - self.charges.get(pool, 0)

    def fits(self, needs: Needs) -> bool:
        free, charges = self.ledger.free_nodes, self.charges
        return all(free.get(pool, 0) - charges.get(pool, 0) >= nodes for pool, nodes in needs)

    def add(self, needs: Needs) -> None:
        for pool, nodes in needs:
            self.charges[pool] = self.charges.get(pool, 0) + nodes
