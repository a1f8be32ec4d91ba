"""Warnings found while composing, pointed at the object and field the user wrote.

Builders return `Finding`s (object, field location, message, stable code); `problem()` turns one
into a `modelplane.api.Problem` with the file and line from the loader's origins when known, so a
composing warning prints exactly like a loading one.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import Manifests, Problem, Severity
from modelplane.api.manifests import Manifest, object_key
from modelplane.api.problems import path_text

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Finding:
    obj: Manifest
    loc: Loc
    message: str
    code: str


def problem(manifests: Manifests, finding: Finding) -> Problem:
    origin = manifests.origin(finding.obj)
    if origin is not None:
        return origin.problem(object_key(finding.obj), finding.loc, finding.message, finding.code,
                              severity=Severity.WARNING)
    kind, namespace, name = object_key(finding.obj)
    return Problem("(manifests)", 0, kind, namespace, name, path_text(finding.loc), finding.message, finding.code,
                   Severity.WARNING)
