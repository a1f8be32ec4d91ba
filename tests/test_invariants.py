"""Invariants are checks (modelplane.invariants): no `assert` statement guards anything in the package,
since `python -O` removes them, and a broken invariant raises `InvariantError` saying what broke."""

import ast
from pathlib import Path

import pytest

import modelplane
from modelplane.invariants import InvariantError, present
from modelplane.scheduling.ledger import Ledger
from modelplane.scheduling.packing import Use
from modelplane.scheduling.snapshot import Snapshot
from tests.builders import cluster, fleet, pool

PACKAGE = Path(modelplane.__file__).parent


def test_no_assert_statement_in_the_package():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 50  # the whole package was read, not an empty glob
    found = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
             for path in sources for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Assert)]
    assert found == []


def test_present_returns_the_value_and_names_the_invariant_when_it_is_missing():
    assert present(0, "zero is a value") == 0
    with pytest.raises(InvariantError, match="^the pool is on the fleet$"):
        present(None, "the pool is on the fleet")


def test_the_ledger_refuses_a_charge_that_would_overcommit_a_pool():
    # pool a/gpu holds 2 nodes; 2 whole-node pods fit, a third does not (hand count)
    ledger = Ledger(Snapshot.of(fleet(cluster("a", pool("gpu", nodes=2)))))
    ledger.charge("ns/x", {("a", "gpu"): Use(whole=2)})
    with pytest.raises(InvariantError, match=r"charging ns/y .* would overcommit a pool"):
        ledger.charge("ns/y", {("a", "gpu"): Use(whole=1)})
    assert ledger.used(("a", "gpu")) == 2  # the refused charge left the ledger as it was
