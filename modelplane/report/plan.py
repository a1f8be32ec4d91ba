"""Placement -> text for people: a fleet table for terminals, markdown for pull-request comments.

Rendering only: every figure comes from the placement and the fleet (nodes used per pool are
`pool_use`'s: whole nodes plus what the shared pods need). The same placement always renders to the same text.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.api import Claim, Fleet, Problem
from modelplane.report import changes as changes_report
from modelplane.report import cost as cost_report
from modelplane.report.comment import GITHUB_COMMENT_LIMIT, Section, fit
from modelplane.report.text import columns, replica_text
from modelplane.invariants import present
from modelplane.scheduling import Placement
from modelplane.scheduling.cost import FleetCost
from modelplane.scheduling.diff import Change, PlacementDiff, ReplicaChange, pool_devices, pool_use


def pool_usage(fleet: Fleet, placement: Placement) -> list[tuple[str, str, str, int, int, str]]:
    """(cluster, pool, class, nodes used, capacity, devices used) for every pool, in fleet order: nodes
    used as the scheduler counts them (`pool_use`), devices as `gpu 5/16` per kind pods claim."""
    used, devices = pool_use(placement), pool_devices(placement)
    rows = []
    for c in fleet.clusters:
        for p in c.spec.node_pools:
            klass = fleet.inference_class(p.class_name)
            claimed = devices.get((c.name, p.name), {})
            kinds = [d for d in klass.spec.devices if d.claim is Claim.DRA] if klass else []
            text = ", ".join(f"{d.name} {claimed.get(d.name, 0)}/{d.count * p.capacity}" for d in kinds) or "-"
            rows.append((c.name, p.name, p.class_name, used.get((c.name, p.name), 0), p.capacity, text))
    return rows


def table(fleet: Fleet, placement: Placement, changes: PlacementDiff | None = None,
          cost: FleetCost | None = None, cost_before: FleetCost | None = None) -> str:
    """The fleet's pools and every deployment's replicas; with `changes` (a plan against `--state`), the
    changes first and each replica marked (a CHANGE column, removed replicas included); with `cost`
    (when classes have prices), the cost per hour last, against `cost_before` when given."""
    pools = [("CLUSTER", "POOL", "CLASS", "NODES USED", "FREE", "DEVICES USED")]
    pools += [(c, p, k, f"{u}/{cap}", str(cap - u), d) for c, p, k, u, cap, d in pool_usage(fleet, placement)]
    # The CHANGE column goes before WHERE, whose short reasons are long lines.
    deployments = [("DEPLOYMENT", "REPLICAS", *(("CHANGE",) if changes else ()), "WHERE")]
    blank = ("",) * (len(deployments[0]) - 3)
    for key, status in placement.deployments.items():
        placed = [(str(change.change), w) if change else (w,) for w, change in _placed(placement, key, changes)]
        deployments.append((key, f"{status.scheduled}/{status.desired}", *(placed[0] if placed else (*blank, "-"))))
        deployments += [("", "", *row) for row in placed[1:]]
        deployments += [("", "", *blank, f"short: {reason}") for reason in status.reasons]
    head = ""
    if changes:
        head = f"{changes_report.table(changes)}\n"
    tail = ""
    if cost:
        tail = f"\n{cost_report.table(cost, cost_before)}"
    return f"{head}{columns(pools)}\n\n{columns(deployments)}\n{tail}"


def markdown(fleet: Fleet, placement: Placement, changes: PlacementDiff | None = None,
             warnings: Sequence[Problem] = (), limit: int = GITHUB_COMMENT_LIMIT,
             cost: FleetCost | None = None, cost_before: FleetCost | None = None) -> str:
    """The pull-request comment, at most `limit` characters: the summary (with `cost`, the fleet's cost
    and its change against `cost_before`), then the changes, the warnings, why each short deployment
    is short, and the full placement, pools and costs collapsed; each part cut, with a note, when the
    ones before it leave too little room (`report.comment`)."""
    short = [key for key, status in placement.deployments.items() if status.short]
    total = sum(s.desired for s in placement.deployments.values())
    head = ["### Modelplane placement", "",
            f"{len(placement.replicas)}/{total} replicas scheduled across {len(fleet.clusters)} clusters"
            + (f"; **{len(short)} deployment(s) short**" if short else "")
            + (f"; {len(warnings)} warning(s)" if warnings else "") + "."]
    if cost:
        head += ["", cost_report.comparison(cost_before, cost)]
    sections = []
    if changes:
        sections.append(Section(changes_report.markdown(changes), "lines of changes", opening=[""]))
    if warnings:
        sections.append(Section([f"- {_html(str(warning))}" for warning in warnings], "warnings",
                                opening=["", "#### Warnings", ""]))
    if short:
        sections.append(Section([f"<details><summary>Why <code>{key}</code> is short</summary>\n\n"
                                 + "\n".join(f"- {_html(reason)}" for reason in placement.deployments[key].reasons)
                                 + "\n\n</details>" for key in short], "short deployments", opening=[""]))
    rows = []
    for key, status in placement.deployments.items():
        placed = _placed(placement, key, changes)
        cells = ["<br>".join(f"`{w}`" for w, _ in placed) or "-"]
        if changes:
            cells.append("<br>".join(_mark(change) for _, change in placed if change) or "-")
        rows.append(f"| `{key}` | {status.scheduled}/{status.desired} | {' | '.join(cells)} |")
    sections.append(Section(rows, "deployments", opening=[
        "", f"<details><summary>Placement: {len(rows)} deployment(s)</summary>", "",
        "| Deployment | Replicas | Where |" + (" Change |" if changes else ""),
        "|---|---|---|" + ("---|" if changes else "")], closing=["", "</details>"]))
    pools = pool_usage(fleet, placement)
    sections.append(Section([f"| {c} | {p} | {k} | {u}/{cap} | {cap - u} | {d} |" for c, p, k, u, cap, d in pools],
                            "pools", opening=["", f"<details><summary>Pools: {len(pools)}</summary>", "",
                                              "| Cluster | Pool | Class | Nodes used | Free | Devices used |",
                                              "|---|---|---|---|---|---|"],
                            closing=["", "</details>"]))
    if cost:
        sections.append(Section(cost_report.markdown(cost), "costs", opening=[
            "", "<details><summary>Cost per hour</summary>", "", "| Cluster or deployment | Per hour |", "|---|---|"],
            closing=["", "</details>"]))
    return fit(head, sections, limit)


def _html(text: str) -> str:
    """Plain text safe inside markdown and HTML blocks (warnings quote manifests and CEL)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _placed(placement: Placement, deployment: str,
            changes: PlacementDiff | None) -> list[tuple[str, ReplicaChange | None]]:
    """Each replica's `replica_text`; with changes also its change, and the removed replicas too."""
    if changes is None:
        return [(replica_text(r), None) for r in placement.replicas_of(deployment)]
    mine = changes.by_deployment.get(deployment, ())
    return [(replica_text(c.after or c.before), c) for c in mine]  # type: ignore[arg-type]


def _mark(change: ReplicaChange) -> str:
    """`create`, `moved from <where>`, `remove` or `unchanged`."""
    if change.change is Change.MOVE:
        return f"moved from `{replica_text(present(change.before, 'a move has a replica before'))}`"
    return str(change.change)
