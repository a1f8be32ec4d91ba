"""Problems: the one shape of every error and warning a user sees about their manifests.

A `Problem` names where (file, line), what (kind, namespace/name, field path) and why (a message
that says what is wrong and what is allowed). Its text is

    FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message          (an error)
    FILE:LINE: warning: KIND NAMESPACE/NAME: FIELD.PATH: message (a warning)

with the object and path parts left out when they are unknown (and the line when the problem is
about a whole file: line 0). Every part is shown through `printable`, so a name or file holding
terminal escape codes or other control characters is shown escaped, never acted on by the
terminal. Checks collect problems instead of
stopping at the first; `ManifestErrors` carries all of them, sorted, so the same input always
prints the same report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters but a line feed, and the Unicode bidirectional controls (which reorder what a
terminal shows)."""


def printable(text: str, newlines: bool = True) -> str:
    """`text` with every control character written as its escape (`\\x1b`, `\\u202e`); line feeds
    too unless `newlines`."""
    escaped = _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)
    return escaped if newlines else escaped.replace("\n", "\\n")


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    kind: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    message: str = field(default="", compare=True)
    code: str = field(default="invalid", compare=False)
    severity: Severity = field(default=Severity.ERROR, compare=False)

    @property
    def subject(self) -> str:
        """`KIND NAMESPACE/NAME` (or `KIND NAME` for cluster-scoped objects), as far as known."""
        ref = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return " ".join(part for part in (self.kind, ref) if part)

    def __str__(self) -> str:
        parts = [f"{self.file}:{self.line}" if self.line else self.file]
        if self.severity is Severity.WARNING:
            parts.append("warning")
        parts.extend(part for part in (self.subject, self.path) if part)
        return ": ".join([*(printable(part, newlines=False) for part in parts), printable(self.message)])


class ManifestErrors(Exception):
    """Every error found in a set of manifests (and the warnings found alongside them)."""

    def __init__(self, errors: list[Problem], warnings: list[Problem] | None = None):
        self.errors: tuple[Problem, ...] = tuple(sorted(errors))
        self.warnings: tuple[Problem, ...] = tuple(sorted(warnings or ()))
        super().__init__("\n".join(str(problem) for problem in self.errors))


def path_text(loc: tuple[str | int, ...]) -> str:
    """Render a location tuple as the user wrote it: `spec.engines[0].members[1].role`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text
