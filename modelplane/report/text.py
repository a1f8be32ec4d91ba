"""What the reports share: aligned columns, and where a replica runs in one line.

`replica_text(replica)` is also how the Pulumi program's `placement` stack output words each replica,
so what `plan` prints and what a stack exports read alike.
"""

from __future__ import annotations

from modelplane.scheduling import Replica


def replica_text(replica: Replica) -> str:
    """`cluster#index (engine: pool, ...)`; a split engine shows `leader-pool+worker-pool`."""
    engines = ", ".join(f"{name}: {'+'.join(dict.fromkeys(m.pool for m in members.values()))}"
                        for name, members in replica.engines.items())
    return f"{replica.cluster}#{replica.index} ({engines})"


def columns(rows: list[tuple[str, ...]]) -> str:
    """Rows as left-aligned columns two spaces apart, trailing blanks stripped."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
