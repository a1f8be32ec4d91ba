"""Typed scalar values an InferenceClass publishes: Kubernetes quantities and semantic versions.

Both are parsed by `modelplane.cel` (the same code the selectors compare them with), so a class
that loads is a class whose every capacity and version a selector can read.
"""

from __future__ import annotations

from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import SemverError, parse_semver


def check_quantity(value: str) -> str:
    try:
        parse_quantity(value)
    except QuantityError as error:
        raise ValueError(f"{value!r} is not a Kubernetes quantity ({error}); write e.g. 80Gi, 81559Mi, 1.5G or 400") from None
    return value


def check_version(value: str) -> str:
    try:
        parse_semver(value)
    except SemverError as error:
        raise ValueError(f"{value!r} is not a semantic version ({error}); write e.g. 9.0.0 or 1.2.3-rc.1") from None
    return value
