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


QUANTITY_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)?([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
"""The syntax of a Kubernetes quantity (`resource.ParseQuantity`'s grammar, which reads a bare suffix
such as `Gi` as zero), as the CRDs check it: it admits a few the parser refuses (an empty string, a
lone sign, an exponent out of range), never refuses one it reads."""
SEMVER_PATTERN = (r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
                  r"(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?"
                  r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
"""A semantic version 2.0.0 (semver.org's grammar, what `semver()` parses without normalizing), as the CRDs
check it: it admits numbers too large for the parser (over 64 bits), never refuses one it reads."""

check_quantity = _checker(parse_quantity, QuantityError, "a Kubernetes quantity", "80Gi, 81559Mi, 1.5G or 400")
check_version = _checker(parse_semver, SemverError, "a semantic version", "9.0.0 or 1.2.3-rc.1")
