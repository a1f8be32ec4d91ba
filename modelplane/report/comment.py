"""Fit a markdown report into one pull-request comment: GitHub refuses bodies over 65,536 characters.

`fit(head, sections, limit)` keeps `head` whole, then each section in order (most important
first) whole while it fits, keeping room for a note on the sections after it. The first that does
not fit keeps its opening lines, as many rows as fit, a note saying how many rows were left out and
where to see everything, and its closing lines (so a cut `<details>` block or table stays well
formed); one line then names what the sections after it would have shown. A section that cannot
show even one row is named in that line instead. Invariant: the result is at most `limit`
characters whenever `head` and that line fit, and the same input always gives the same text.
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
    for index, section in enumerate(sections):
        rest = sections[index + 1:]
        whole = [*section.opening, *section.rows, *section.closing]
        if _size([*lines, *whole]) + _omitted_size(rest, limit) <= limit:
            lines += whole
            continue
        note = f"*{{}} more {section.what} not shown: a comment holds at most {limit:,} characters; {FULL_OUTPUT}.*"
        frame = [*section.opening, "", note.format(len(section.rows)), *section.closing]
        budget = limit - _size([*lines, *frame]) - _omitted_size(rest, limit)
        kept: list[str] = []
        for row in section.rows:
            if _size([*kept, row]) > budget:
                break
            kept.append(row)
        if kept:
            lines += [*section.opening, *kept, "", note.format(len(section.rows) - len(kept)), *section.closing]
            lines += ["", _omitted(rest, limit)] if rest else []
        else:
            lines += ["", _omitted(sections[index:], limit)]
        break
    return "\n".join(lines) + "\n"


def _omitted(sections: Sequence[Section], limit: int) -> str:
    left_out = ", ".join(f"{len(section.rows)} {section.what}" for section in sections)
    return f"*Not shown, to stay under {limit:,} characters: {left_out}; {FULL_OUTPUT}.*"


def _omitted_size(sections: Sequence[Section], limit: int) -> int:
    """Room to keep for the note on `sections` should they not fit (none when there are none)."""
    return _size(["", _omitted(sections, limit)]) if sections else 0


def _size(lines: Sequence[str]) -> int:
    """Characters the lines take in the joined text, each with its newline."""
    return sum(len(line) + 1 for line in lines)
