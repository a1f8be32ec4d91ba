"""What a placement costs per hour: per deployment, per cluster, for the fleet, and its idle capacity.

Prices are each pool's InferenceClass `spec.pricing` (per node per hour). Pure and exact (Decimal
arithmetic), so the same placement always costs the same:
- a deployment costs the nodes its replicas hold x their pools' price, a pod that shares nodes the
  share of a node it claims (its largest fraction of a kind's devices: 1 of 8 GPUs is 0.125);
- a cluster costs its used nodes plus the free nodes of its fixed-size pools (no `maxNodeCount`:
  those nodes run whether used or not), which are its idle cost; an autoscaling pool costs the
  nodes in use;
- the fleet costs the sum of its clusters.
Nodes of a class without a price (or of a pool the fleet no longer has) are counted as unpriced,
never as zero, and amounts in different currencies are never added together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from modelplane.api import Fleet
from modelplane.api.fleet import Pricing
from modelplane.scheduling.diff import pool_use
from modelplane.scheduling.ledger import PoolKey
from modelplane.scheduling.placement import Placement


@dataclass(frozen=True)
class Cost:
    amounts: dict[str, Decimal] = field(default_factory=dict)
    """Per hour, by ISO 4217 currency."""
    unpriced_nodes: Decimal = Decimal(0)
    """Whole for a pool, possibly a fraction for a deployment whose pods share nodes."""

    @classmethod
    def of(cls, nodes: int | Decimal, pricing: Pricing | None) -> Cost:
        if nodes == 0:
            return cls()
        if pricing is None:
            return cls(unpriced_nodes=Decimal(nodes))
        return cls({pricing.currency: pricing.amount * nodes})

    def __add__(self, other: Cost) -> Cost:
        amounts = dict(self.amounts)
        for currency, amount in other.amounts.items():
            amounts[currency] = amounts.get(currency, Decimal(0)) + amount
        return Cost(amounts, self.unpriced_nodes + other.unpriced_nodes)

    def __sub__(self, other: Cost) -> Cost:
        return self + Cost({c: -a for c, a in other.amounts.items()}, -other.unpriced_nodes)

    def text(self, *, signed: bool = False) -> str:
        """`12.34 USD/h`, `12.34 USD/h + 2 unpriced node(s)`, `2 unpriced node(s)`; `-` for nothing.
        Signed (a difference): `+12.34 USD/h, -2 unpriced node(s)`."""
        sign = "+" if signed else ""
        parts = [f"{amount:{sign}.2f} {currency}/h" for currency, amount in sorted(self.amounts.items())]
        if self.unpriced_nodes:
            parts.append(f"{_number(self.unpriced_nodes, sign)} unpriced node(s)")
        return (", " if signed else " + ").join(parts) or "-"

    def to_json(self) -> dict[str, Any]:
        return {"perHour": {currency: str(amount) for currency, amount in sorted(self.amounts.items())},
                "unpricedNodes": int(self.unpriced_nodes) if _whole(self.unpriced_nodes) else float(self.unpriced_nodes)}


def _whole(nodes: Decimal) -> bool:
    return Decimal(nodes) == Decimal(nodes).to_integral_value()


def _number(nodes: Decimal, sign: str) -> str:
    return f"{int(nodes):{sign}d}" if _whole(nodes) else f"{Decimal(nodes).normalize():{sign}f}"


@dataclass(frozen=True)
class FleetCost:
    deployments: dict[str, Cost]
    """By namespace/name: the nodes its replicas hold."""
    clusters: dict[str, Cost]
    """By name: used nodes plus idle ones."""
    idle: dict[str, Cost]
    """By cluster name: the free nodes of its fixed-size pools."""

    @property
    def fleet(self) -> Cost:
        return total(self.clusters.values())

    @property
    def idle_total(self) -> Cost:
        return total(self.idle.values())


def total(costs: Iterable[Cost]) -> Cost:
    result = Cost()
    for cost in costs:
        result += cost
    return result


def priced(fleet: Fleet) -> bool:
    """Whether any class has a price (only then is cost worth showing)."""
    return any(c.spec.pricing is not None for c in fleet.classes)


def placement_cost(fleet: Fleet, placement: Placement) -> FleetCost:
    pricing = _pool_pricing(fleet)
    deployments: dict[str, Cost] = {key: Cost() for key in placement.deployments}
    for replica in placement.replicas:
        for pool, nodes in sorted(replica.pools().items()):
            cost = Cost.of(nodes, pricing.get((replica.cluster, pool)))
            deployments[replica.deployment] = deployments.get(replica.deployment, Cost()) + cost
    used = pool_use(placement)
    clusters: dict[str, Cost] = {}
    idle: dict[str, Cost] = {}
    for cluster in fleet.clusters:
        used_cost, idle_cost = Cost(), Cost()
        for pool in cluster.spec.node_pools:
            key = (cluster.name, pool.name)
            used_cost += Cost.of(used.get(key, 0), pricing[key])
            if pool.max_node_count is None:
                idle_cost += Cost.of(max(pool.capacity - used.get(key, 0), 0), pricing[key])
        clusters[cluster.name] = used_cost + idle_cost
        idle[cluster.name] = idle_cost
    return FleetCost(dict(sorted(deployments.items())), clusters, idle)


def _pool_pricing(fleet: Fleet) -> dict[PoolKey, Pricing | None]:
    prices: dict[PoolKey, Pricing | None] = {}
    for cluster in fleet.clusters:
        for pool in cluster.spec.node_pools:
            klass = fleet.inference_class(pool.class_name)
            prices[(cluster.name, pool.name)] = klass.spec.pricing if klass else None
    return prices
