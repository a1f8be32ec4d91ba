"""Placement -> text for people: a fleet table for terminals, markdown for pull-request comments.

Rendering only: every figure comes from the placement and the fleet (nodes used per pool are the
sum of the members' `nodes` there). The same placement always renders to the same text.
"""

from __future__ import annotations

from modelplane.api import Fleet
from modelplane.scheduling import Placement, Replica


def pool_usage(fleet: Fleet, placement: Placement) -> list[tuple[str, str, str, int, int]]:
    """(cluster, pool, class, used, capacity) for every pool, in fleet order."""
    used: dict[tuple[str, str], int] = {}
    for replica in placement.replicas:
        for pool, nodes in replica.pools().items():
            used[(replica.cluster, pool)] = used.get((replica.cluster, pool), 0) + nodes
    return [(c.name, p.name, p.class_name, used.get((c.name, p.name), 0), p.capacity)
            for c in fleet.clusters for p in c.spec.node_pools]


def where(replica: Replica) -> str:
    """`cluster#index (engine: pool, ...)`; a split engine shows `leader-pool+worker-pool`."""
    engines = ", ".join(f"{name}: {'+'.join(dict.fromkeys(m.pool for m in members.values()))}"
                        for name, members in replica.engines.items())
    return f"{replica.cluster}#{replica.index} ({engines})"


def table(fleet: Fleet, placement: Placement) -> str:
    pools = [("CLUSTER", "POOL", "CLASS", "NODES USED", "FREE")]
    pools += [(c, p, k, f"{u}/{cap}", str(cap - u)) for c, p, k, u, cap in pool_usage(fleet, placement)]
    deployments = [("DEPLOYMENT", "REPLICAS", "WHERE")]
    for key, status in placement.deployments.items():
        placed = [where(r) for r in placement.replicas_of(key)]
        deployments.append((key, f"{status.scheduled}/{status.desired}", placed[0] if placed else "-"))
        deployments += [("", "", w) for w in placed[1:]]
        deployments += [("", "", f"short: {reason}") for reason in status.reasons]
    return f"{_columns(pools)}\n\n{_columns(deployments)}\n"


def markdown(fleet: Fleet, placement: Placement) -> str:
    short = [key for key, status in placement.deployments.items() if status.short]
    total = sum(s.desired for s in placement.deployments.values())
    lines = ["### Modelplane placement", "",
             f"{len(placement.replicas)}/{total} replicas scheduled across {len(fleet.clusters)} clusters"
             + (f"; **{len(short)} deployment(s) short**" if short else "."), "",
             "| Deployment | Replicas | Where |", "|---|---|---|"]
    for key, status in placement.deployments.items():
        placed = "<br>".join(f"`{where(r)}`" for r in placement.replicas_of(key)) or "-"
        lines.append(f"| `{key}` | {status.scheduled}/{status.desired} | {placed} |")
    lines += ["", "| Cluster | Pool | Class | Nodes used | Free |", "|---|---|---|---|---|"]
    lines += [f"| {c} | {p} | {k} | {u}/{cap} | {cap - u} |" for c, p, k, u, cap in pool_usage(fleet, placement)]
    for key in short:
        lines += ["", f"<details><summary>Why <code>{key}</code> is short</summary>", ""]
        lines += [f"- {reason}" for reason in placement.deployments[key].reasons]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _columns(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
