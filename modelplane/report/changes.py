"""A `PlacementDiff` -> text for people: the "Changes" section of `plan --state` and of `plan --what-if`.

Rendering only (the diff comes from `modelplane.scheduling.diff`): per deployment whose replicas or
counts change, its replicas before -> after and each replica created, moved (from -> to) or
removed; per pool whose use changes, nodes used and free before -> after; the deployments that
become short, with their reasons. The same diff always renders to the same text.
"""

from __future__ import annotations

import html

from modelplane.invariants import present
from modelplane.report.text import columns, replica_text
from modelplane.scheduling.diff import Change, PlacementDiff, PoolChange, ReplicaChange


def change_text(change: ReplicaChange) -> str:
    """`create c#0 (e: p)`, `move a#0 (e: p) -> b#0 (e: q)`, `remove c#1 (e: p)`."""
    if change.change is Change.CREATE:
        return f"create {replica_text(present(change.after, 'a create has a replica after'))}"
    before = present(change.before, f"a {change.change} has a replica before")
    if change.change is Change.REMOVE:
        return f"remove {replica_text(before)}"
    after = present(change.after, f"a {change.change} has a replica after")
    return f"{change.change} {replica_text(before)} -> {replica_text(after)}"


def table(changes: PlacementDiff) -> str:
    """The changes as aligned columns, headed `CHANGES: N to create, M to move, K to remove`."""
    sections = [f"CHANGES: {changes.summary()}"]
    rows = [("DEPLOYMENT", "REPLICAS", "CHANGE")]
    for deployment, counts, texts in _deployment_rows(changes):
        rows.append((deployment, counts, texts[0] if texts else "-"))
        rows += [("", "", text) for text in texts[1:]]
    if len(rows) > 1:
        sections.append(columns(rows))
    if changes.pools:
        pools = [("POOL", "NODES USED", "FREE")]
        pools += [(f"{p.cluster}/{p.pool}", *_pool_cells(p)) for p in changes.pools]
        sections.append(columns(pools))
    short = [d for d in changes.deployments if d.became_short]
    if short:
        sections.append("\n".join(["BECOMES SHORT", *(f"{d.deployment}: {reason}" for d in short
                                                       for reason in d.reasons)]))
    return "\n\n".join(sections) + "\n"


def markdown(changes: PlacementDiff) -> list[str]:
    """The changes as markdown lines: a heading with the counts, a deployment and a pool table."""
    lines = [f"#### Changes: {changes.summary()}"]
    rows = _deployment_rows(changes)
    if rows:
        lines += ["", "| Deployment | Replicas | Change |", "|---|---|---|"]
        lines += [f"| `{deployment}` | {counts} | {'<br>'.join(_code(t) for t in texts) or '-'} |"
                  for deployment, counts, texts in rows]
    if changes.pools:
        lines += ["", "| Pool | Nodes used | Free |", "|---|---|---|"]
        lines += [f"| `{p.cluster}/{p.pool}` | {' | '.join(_pool_cells(p))} |" for p in changes.pools]
    short = [d for d in changes.deployments if d.became_short]
    if short:
        lines += ["", "Becomes short:", ""]
        lines += [f"- `{d.deployment}`: {_text(reason)}" for d in short for reason in d.reasons]
    return lines


def _deployment_rows(changes: PlacementDiff) -> list[tuple[str, str, list[str]]]:
    # A deployment asks for at least one replica: desired 0 means it is not declared on that side.
    counts = {d.deployment: " -> ".join(f"{s}/{n}" if n else "-" for s, n in zip(d.scheduled, d.desired))
              for d in changes.deployments}
    texts: dict[str, list[str]] = {}
    for change in changes.changed:
        texts.setdefault(change.deployment, []).append(change_text(change))
    return [(key, counts[key], texts.get(key, [])) for key in sorted(counts)]


def _pool_cells(pool: PoolChange) -> tuple[str, str]:
    used = [f"{u}/{c}" if c is not None else "-" for u, c in zip(pool.used, pool.capacity)]
    free = [str(f) if f is not None else "-" for f in pool.free]
    return f"{used[0]} -> {used[1]}", f"{free[0]} -> {free[1]}"


def _text(text: str) -> str:
    """Plain text for markdown: `<` and `&` escaped outside code spans (inside them they show as written)."""
    parts = text.split("`")
    return "`".join(html.escape(part, quote=False) if index % 2 == 0 else part for index, part in enumerate(parts))


def _code(text: str) -> str:
    verb, _, rest = text.partition(" ")
    return f"{verb} " + " -> ".join(f"`{part}`" for part in rest.split(" -> "))
