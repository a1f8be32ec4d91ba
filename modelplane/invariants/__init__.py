"""Invariants are checks: what one part of modelplane guarantees another, checked at run time.

An invariant is something the code relies on and the input cannot break: the loader validated the
manifests, the planner placed only on pools that match, compose renders each object once. When one
does not hold, modelplane has a bug (or its state was edited by hand), and carrying on could
overcommit a pool or register the wrong resources. So each is checked with an `if` and raises
`InvariantError` saying what broke, never with `assert`, which `python -O` removes
(`tests/test_invariants.py` holds that no `assert` statement is left in the package).

Pure: no I/O, no process-wide state; every layer may import it.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class InvariantError(RuntimeError):
    """An invariant of modelplane does not hold: a bug to report, not a mistake in the manifests.
    The message says which invariant broke and with what values."""


def present(value: T | None, invariant: str) -> T:
    """`value`, or an `InvariantError` naming `invariant` when it is None (a lookup that cannot miss)."""
    if value is None:
        raise InvariantError(invariant)
    return value
