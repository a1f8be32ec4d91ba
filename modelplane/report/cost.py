"""A `FleetCost` -> text for people: the cost section of `plan` and the cost line of a comparison.

Rendering only (the figures come from `modelplane.scheduling.cost`): the fleet, its idle capacity,
each cluster and each deployment per hour; with a second cost (the `--state` placement, or the plan
before a what-if), the fleet's cost before -> after and the difference.
"""

from __future__ import annotations

from modelplane.report.text import columns
from modelplane.scheduling.cost import Cost, FleetCost


def table(cost: FleetCost, before: FleetCost | None = None) -> str:
    """Columns: the fleet (with `before`, its cost then and the difference), idle capacity, each
    cluster, each deployment."""
    rows = [("COST", "PER HOUR"), ("fleet", cost.fleet.text())]
    if before is not None:
        rows += [("fleet in the --state placement", before.fleet.text()), ("change", delta(before, cost))]
    rows += [("idle (free nodes of fixed-size pools)", cost.idle_total.text())]
    rows += [(f"cluster {name}", c.text()) for name, c in cost.clusters.items()]
    rows += [(name, c.text()) for name, c in cost.deployments.items()]
    return columns(rows) + "\n"


def markdown(cost: FleetCost) -> list[str]:
    """The cost table rows (cluster and deployment), for a collapsed section."""
    lines = [f"| cluster `{name}` | {c.text()} |" for name, c in cost.clusters.items()]
    return lines + [f"| `{name}` | {c.text()} |" for name, c in cost.deployments.items()]


def comparison(before: FleetCost | None, after: FleetCost) -> str:
    """`Fleet cost: A (idle I)`, and against a previous placement `Fleet cost: B -> A (idle I), D`."""
    idle = after.idle_total
    now = after.fleet.text() + (f" (idle {idle.text()})" if idle.amounts or idle.unpriced_nodes else "")
    if before is None:
        return f"Fleet cost: {now}"
    return f"Fleet cost: {before.fleet.text()} -> {now}, {delta(before, after)}"


def delta(before: FleetCost, after: FleetCost) -> str:
    """The fleet's cost after minus before, signed (`+98.32 USD/h`), or `no change`."""
    change = after.fleet - before.fleet
    change = Cost({currency: amount for currency, amount in change.amounts.items() if amount}, change.unpriced_nodes)
    return change.text(signed=True) if change.amounts or change.unpriced_nodes else "no change"
