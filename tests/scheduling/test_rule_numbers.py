"""The placement rules are numbered once, in the module that implements each, and named elsewhere.

Issue 21: module docstrings numbered the rules differently from the README. Now each number 1-8
appears exactly once in the package, as `Rule N, Name`, in the order of the README's "How placement
works" (Clusters, Pools, Engines, Pool choice, Capacity, Retain, Scale down, Fill), and any other
mention of a rule by number is an error.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "modelplane"
RULES = ("Clusters", "Pools", "Engines", "Pool choice", "Capacity", "Retain", "Scale down", "Fill")
HOME = {"Clusters": "cluster_rules.py", "Pools": "match.py", "Engines": "engines.py", "Pool choice": "engines.py",
        "Capacity": "ledger.py", "Retain": "retain.py", "Scale down": "retain.py", "Fill": "fill.py"}
"""Where each rule is implemented (scheduling/)."""


def test_each_rule_is_numbered_once_where_it_is_implemented() -> None:
    numbered: list[tuple[int, str, str]] = []
    loose: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line_number, line in enumerate(path.read_text().splitlines(), 1):
            for found in re.finditer(r"\b[Rr]ules? (\d+)(, ([A-Z][a-z]+(?: [a-z]+)?))?", line):
                if found.group(0).startswith("Rule ") and found.group(3):
                    numbered.append((int(found.group(1)), found.group(3), path.name))
                else:
                    loose.append(f"{path.relative_to(PACKAGE)}:{line_number}: {found.group(0)}")
    assert loose == []
    assert sorted(numbered) == [(index, rule, HOME[rule]) for index, rule in enumerate(RULES, 1)]
