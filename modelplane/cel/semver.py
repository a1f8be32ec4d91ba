"""Semantic versions as Kubernetes' CEL ``semver()`` parses and orders them.

Contract: ``parse_semver(text)`` accepts exactly what github.com/blang/semver/v4 ``Parse`` accepts
(the parser behind Kubernetes' semver library, staging/src/k8s.io/apiserver/pkg/cel/library/
semverlib.go, and behind DRA version attributes), raising ``SemverError`` otherwise.
``parse_semver(text, normalize=True)`` first applies the library's ``normalizeAndParse``: drop one
leading "v", strip leading zeros from each of the first three dot-separated parts, and pad a
missing minor/patch with ".0" (refused when that short form carries "-" or "+").

Ordering (``Version.Compare``): major, minor, patch numerically; a release is above any of its
pre-releases; pre-release identifiers compare pairwise, numeric ones numerically and below
alphanumeric ones, alphanumeric ones by bytes; when all shared identifiers are equal the version
with more identifiers is greater. Build metadata never takes part, so equality ignores it too.
"""

from __future__ import annotations

from dataclasses import dataclass

_NUMBERS = frozenset("0123456789")
_ALPHANUMERIC = _NUMBERS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")
_UINT64_MAX = 2**64 - 1


class SemverError(ValueError):
    """A string that is not a semantic version."""


@dataclass(frozen=True, eq=False)
class Semver:
    """A parsed version; equality and order follow ``Version.Compare`` (build ignored)."""

    major: int
    minor: int
    patch: int
    # Numeric identifiers are (0, n), alphanumeric ones (1, text): tuple order is semver order.
    pre: tuple[tuple[int, int | str], ...]
    text: str

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # A release (no pre-release) sorts above every pre-release of the same version.
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, self.pre)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.text

    def compare(self, other: Semver) -> int:
        mine, theirs = self._key(), other._key()
        return (mine > theirs) - (mine < theirs)


def _number(part: str, what: str) -> int:
    if not all(c in _NUMBERS for c in part):
        raise SemverError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    if not part or int(part) > _UINT64_MAX:
        raise SemverError(f"invalid {what} number {part!r}")
    return int(part)


def _prerelease(part: str) -> tuple[int, int | str]:
    if not part:
        raise SemverError("Prerelease is empty")
    if all(c in _NUMBERS for c in part):
        if len(part) > 1 and part[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {part!r}")
        if int(part) > _UINT64_MAX:
            raise SemverError(f"invalid prerelease number {part!r}")
        return (0, int(part))
    if not all(c in _ALPHANUMERIC for c in part):
        raise SemverError(f"Invalid character(s) found in prerelease {part!r}")
    return (1, part)


def _normalize(text: str) -> str:
    text = text[1:] if text.startswith("v") else text
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def parse_semver(text: str, *, normalize: bool = False) -> Semver:
    source = text
    if normalize:
        text = _normalize(text)
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major"), _number(parts[1], "minor")
    rest, _, build = parts[2].partition("+")
    patch_text, dash, pre_text = rest.partition("-")
    patch = _number(patch_text, "patch")
    pre = tuple(_prerelease(p) for p in pre_text.split(".")) if dash else ()
    if "+" in parts[2]:
        for item in build.split("."):
            if not item:
                raise SemverError("Build meta data is empty")
            if not all(c in _ALPHANUMERIC for c in item):
                raise SemverError(f"Invalid character(s) found in build meta data {item!r}")
    return Semver(major, minor, patch, pre, source)
