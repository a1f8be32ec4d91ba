"""Typed scalar values an InferenceClass publishes: Kubernetes quantities and semantic versions.

Both are parsed by `modelplane.cel` (the same code the selectors compare them with), so a class
that loads is a class whose every capacity and version a selector can read.

The loader and the generated CRDs agree exactly: a value is refused by both or read by both. Each check
is the parser plus a bound of ours that a CRD pattern can state and the parser cannot (below); the
patterns say the parser's grammar within those bounds, and tests/api/test_crd_coverage.py holds the two
together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import Semver, SemverError, parse_semver

QUANTITY_MAX_LENGTH = 64
QUANTITY_EXPONENT_DIGITS = 3
"""Bounds of ours on a quantity, refused by the loader and the CRD alike: at most 64 characters, and an
exponent (`1e18`) of at most three digits after its leading zeros. Kubernetes reads any int64 exponent,
then truncates it to 32 bits (`1e4294967296` is 1), which no pattern can follow."""

_NO_DIGIT_SUFFIX = r"([KMGT]i|[numkMGTPE]|[eE]\+?0*[0-9]{1,3}|[eE]-0*[0-9])"
QUANTITY_PATTERN = (r"^([+-]|[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?0*[0-9]{1,3})?"
                    rf"|\.?{_NO_DIGIT_SUFFIX}|\.))$")
"""Exactly the strings Kubernetes' `resource.ParseQuantity` reads (apimachinery pkg/api/resource/quantity.go),
within the exponent bound: a sign, digits with at most one dot, then a suffix. A number without digits (`+`,
`.`, `-.Gi`, `e5`) is zero on ParseQuantity's int64 path; it fails where that path is not taken: with Pi or
Ei, or an exponent below -9."""

SEMVER_NUMBER_DIGITS = 19
"""A bound of ours on a version, refused by the loader and the CRD alike: every number (major, minor, patch,
numeric pre-release identifier) has at most 19 digits. The parser reads numbers to 2^64-1 (20 digits),
which a pattern could state only digit by digit."""
_SEMVER_NUMBER = rf"(0|[1-9][0-9]{{0,{SEMVER_NUMBER_DIGITS - 1}}})"
_SEMVER_PRE = rf"({_SEMVER_NUMBER}|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_PATTERN = (rf"^{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}(-{_SEMVER_PRE}(\.{_SEMVER_PRE})*)?"
                  r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
"""Exactly the semantic versions `semver()` parses without normalizing (semver.org's grammar, as
github.com/blang/semver/v4 reads it), within the number bound."""

_EXPONENT = re.compile(r"[^eE]*[eE][+-]?0*([0-9]*)")


def _quantity_bound(value: str, _quantity: Any) -> str | None:
    exponent = _EXPONENT.fullmatch(value)
    if len(value) > QUANTITY_MAX_LENGTH:
        return f"it is longer than {QUANTITY_MAX_LENGTH} characters"
    if exponent and len(exponent.group(1)) > QUANTITY_EXPONENT_DIGITS:
        return f"its exponent has more than {QUANTITY_EXPONENT_DIGITS} digits"
    return None


def _version_bound(_value: str, version: Semver) -> str | None:
    numbers = (version.major, version.minor, version.patch, *(n for _, n in version.pre if isinstance(n, int)))
    if any(len(str(number)) > SEMVER_NUMBER_DIGITS for number in numbers):
        return f"a number has more than {SEMVER_NUMBER_DIGITS} digits"
    return None


def _checker(parse: Callable[[str], Any], error: type[ValueError], bound: Callable[[str, Any], str | None],
             what: str, examples: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            parsed = parse(value)
        except error as problem:
            raise ValueError(f"{value!r} is not {what} ({problem}); write e.g. {examples}") from None
        past = bound(value, parsed)
        if past is not None:
            raise ValueError(f"{value!r} is {what} past modelplane's bounds ({past}); write e.g. {examples}")
        return value

    return check


check_quantity = _checker(parse_quantity, QuantityError, _quantity_bound, "a Kubernetes quantity",
                          "80Gi, 81559Mi, 1.5G or 400")
check_version = _checker(parse_semver, SemverError, _version_bound, "a semantic version", "9.0.0 or 1.2.3-rc.1")
