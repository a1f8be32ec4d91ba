"""Fit a markdown report into one pull-request comment: GitHub refuses bodies over 65,536 characters.

`fit(head, sections, limit)` keeps `head` whole, then each section in order (most important
first): whole when it fits in what is left, otherwise its opening lines, as many rows as fit, a note
saying how many rows were left out and where to see them, and its closing lines (so a cut
`<details>` block or table stays well formed). A section that cannot show even one row is left out
with that note alone. Invariant: the result is at most `limit` characters whenever `head` and the
notes fit, and the same input always gives the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GITHUB_COMMENT_LIMIT = 65_536

FULL_OUTPUT = "`modelplane plan --format table` prints everything"


@dataclass(frozen=True)
class Section:
    rows: Sequence[str]
    """The lines that may be cut (each may span several lines, like a whole `<details>` block)."""
    what: str
    """What a row is, for the note on a cut section (`deployments`, `warnings`)."""
    opening: Sequence[str] = ()
    closing: Sequence[str] = ()


def fit(head: Sequence[str], sections: Sequence[Section], limit: int = GITHUB_COMMENT_LIMIT) -> str:
    lines = list(head)
    used = _size(lines)
    for section in sections:
        whole = [*section.opening, *section.rows, *section.closing]
        if used + _size(whole) <= limit:
            lines += whole
            used += _size(whole)
            continue
        note = f"*{{}} more {section.what} not shown: a comment holds at most {limit:,} characters; {FULL_OUTPUT}.*"
        kept: list[str] = []
        budget = limit - used - _size([*section.opening, "", note.format(len(section.rows)), *section.closing])
        for row in section.rows:
            if _size([*kept, row]) > budget:
                break
            kept.append(row)
        cut = [*section.opening, *kept, "", note.format(len(section.rows) - len(kept)), *section.closing]
        if not kept:
            cut = ["", note.format(len(section.rows))]
        lines += cut
        used += _size(cut)
    return "\n".join(lines) + "\n"


def _size(lines: Sequence[str]) -> int:
    """Characters the lines take in the joined text, each with its newline."""
    return sum(len(line) + 1 for line in lines)
