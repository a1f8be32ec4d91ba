"""Typed scalar values an InferenceClass publishes: Kubernetes quantities and semantic versions.

Both are parsed by `modelplane.cel` (the same code the selectors compare them with), so a class
that loads is a class whose every capacity and version a selector can read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import SemverError, parse_semver


def _checker(parse: Callable[[str], Any], error: type[ValueError], what: str, examples: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            parse(value)
        except error as problem:
            raise ValueError(f"{value!r} is not {what} ({problem}); write e.g. {examples}") from None
        return value

    return check


check_quantity = _checker(parse_quantity, QuantityError, "a Kubernetes quantity", "80Gi, 81559Mi, 1.5G or 400")
check_version = _checker(parse_semver, SemverError, "a semantic version", "9.0.0 or 1.2.3-rc.1")
