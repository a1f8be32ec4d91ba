"""Semantic versions: what semver() accepts and how versions order.

Expected values come from the semver 2.0.0 specification (semver.org, item 11: the precedence
example "1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta < 1.0.0-beta.2 <
1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0"), which github.com/blang/semver/v4 implements, and from the
doc comments of staging/src/k8s.io/apiserver/pkg/cel/library/semverlib.go (the normalize
argument, isSemver examples) and dynamic-resource-allocation/cel/compile_test.go ("version_v").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from modelplane.cel import selector_matches
from modelplane.cel.semver import SemverError, parse_semver
from tests.cel.devices import Expression

# semver.org item 11, in increasing order.
PRECEDENCE = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
              "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "2.0.0", "2.1.0", "2.1.1"]


def test_spec_precedence_chain() -> None:
    for lower, higher in itertools.combinations(PRECEDENCE, 2):
        assert parse_semver(lower).compare(parse_semver(higher)) == -1, (lower, higher)
        assert parse_semver(higher).compare(parse_semver(lower)) == 1, (higher, lower)


@dataclass(frozen=True)
class Order:
    name: str
    left: str
    right: str
    want: int


ORDER = [
    Order("numeric identifiers compare numerically", "1.0.0-2", "1.0.0-11", -1),
    Order("numeric identifiers are below alphanumeric ones", "1.0.0-999", "1.0.0-a", -1),
    Order("alphanumeric identifiers compare by ASCII", "1.0.0-Z", "1.0.0-a", -1),
    Order("more identifiers win when the shared ones are equal", "1.0.0-a.b", "1.0.0-a", 1),
    Order("a release is above its pre-release", "9.0.0", "9.0.0-rc.1", 1),
    Order("build metadata does not order", "1.0.0+build.1", "1.0.0+build.2", 0),
    Order("build metadata does not order a pre-release either", "1.0.0-rc.1+a", "1.0.0-rc.1", 0),
    Order("minor is numeric, not textual", "8.10.0", "8.9.0", 1),
    Order("compute capability 9.0 is above 8.9", "9.0.0", "8.9.0", 1),
]


@pytest.mark.parametrize("case", ORDER, ids=lambda c: c.name)
def test_compare(case: Order) -> None:
    assert parse_semver(case.left).compare(parse_semver(case.right)) == case.want
    assert (parse_semver(case.left) == parse_semver(case.right)) is (case.want == 0)


# blang/semver v4 Parse: strict major.minor.patch, no leading zeros, no "v".
REJECTED = [
    ("an empty string", ""),
    ("two parts", "1.0"),
    ("a v prefix without normalize", "v1.0.0"),
    ("a leading zero in major", "01.0.0"),
    ("a leading zero in patch", "1.0.00"),
    ("a leading zero in a numeric pre-release", "1.0.0-01"),
    ("an empty pre-release identifier", "1.0.0-"),
    ("an empty build identifier", "1.0.0+"),
    ("a character outside [0-9A-Za-z-]", "1.0.0-rc_1"),
    ("a word", "Three"),
    ("a quantity", "200K"),
    ("a number past uint64", "18446744073709551616.0.0"),
]


@pytest.mark.parametrize(("name", "text"), REJECTED, ids=[r[0] for r in REJECTED])
def test_parse_rejects(name: str, text: str) -> None:
    with pytest.raises(SemverError):
        parse_semver(text)


# semverlib.go doc examples and compile_test.go "version_v".
LIBRARY = [
    Expression("isSemver accepts 1.0.0", 'isSemver("1.0.0")', True),
    Expression("isSemver refuses v1.0", 'isSemver("v1.0")', False),
    Expression("normalize drops v and pads", 'isSemver("v1.0", true)', True),
    Expression("normalize strips leading zeros", 'semver("01.01.01", true) == semver("1.1.1")', True),
    Expression("normalize refuses a short pre-release", 'isSemver("1.0-rc.1", true)', False),
    Expression("the v-prefixed comparison from compile_test.go",
               'semver("1.0.0").isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', True),
    Expression("major minor patch", 'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && '
                                    'semver("1.2.3").patch() == 3', True),
    Expression("compareTo returns -1", 'semver("1.2.3").compareTo(semver("2.0.0")) == -1', True),
    Expression("equality ignores build metadata", 'semver("1.0.0+a") == semver("1.0.0+b")', True),
    Expression("an invalid literal is a runtime error, so no match", 'semver("1.0").major() == 1', False),
]


@pytest.mark.parametrize("case", LIBRARY, ids=lambda c: c.name)
def test_library(case: Expression) -> None:
    assert selector_matches(case.cel, {"driver": "gpu.nvidia.com"}) is case.want
