"""Replicas re-placed off an unreachable cluster are stranded, not deleted, until it answers
(`scheduling.observed.stranded`, kept by the placement provider in its state).

Driven as the engine drives the provider (tests/pulumi/test_observed_capacity.py's `run`): a deployment
of one whole-node replica on `a`; `a` unreachable past its grace, so the replica moves to `b`.
Expected from the rule: while `a` cannot be reached, its old replica is kept in `stranded` (so its
objects stay registered and nothing is deleted there); once `a` answers, `stranded` is empty (the
next run deletes them); a cluster that is reachable but has no Ready node strands nothing (deletes work).
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling import Placement
from modelplane.scheduling.observed import ClusterObservation, PoolObservation
from tests.pulumi.test_observed_capacity import DOWN, T0, UP, run, where


def kept(outputs: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [r.slot for r in Placement.from_json(outputs["stranded"]).replicas]


def test_a_replica_moved_off_an_unreachable_cluster_is_kept_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    first = run({}, UP, T0, monkeypatch)
    assert where(first) == [("a", 0)] and kept(first) == []
    down = run(first, DOWN, T0 + 60, monkeypatch)
    assert kept(down) == [], "within the grace it has not moved"
    moved = run(down, DOWN, T0 + 660, monkeypatch)
    assert where(moved) == [("b", 0)] and kept(moved) == [("ml/m", "a", 0)]
    still = run(moved, DOWN, T0 + 900, monkeypatch)
    assert where(still) == [("b", 0)] and kept(still) == [("ml/m", "a", 0)], "carried while a cannot answer"
    same = run(still, DOWN, T0 + 1000, monkeypatch)
    assert same["stranded"] == still["stranded"]
    back = run(still, UP, T0 + 1200, monkeypatch)
    assert where(back) == [("b", 0)] and kept(back) == [], "a answers: its old objects are deleted"
    again = run(back, UP, T0 + 1300, monkeypatch)
    assert kept(again) == [] and where(again) == [("b", 0)]


def test_a_reachable_cluster_without_ready_nodes_strands_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    first = run({}, UP, T0, monkeypatch)
    not_ready = ClusterObservation(True, {"gpu": PoolObservation(2, 0)})
    down = run(first, not_ready, T0 + 60, monkeypatch)
    moved = run(down, not_ready, T0 + 660, monkeypatch)
    assert where(moved) == [("b", 0)] and kept(moved) == []


def test_an_unreadable_stranded_document_is_a_check_failure() -> None:
    from modelplane.pulumi.placement import PlacementProvider, objects_text
    from tests.pulumi.test_observed_capacity import OBJECTS, wire
    from modelplane.scheduling.observed import observations_to_json

    news = {"objects": objects_text(OBJECTS), "strict": False, "observed": observations_to_json({"a": DOWN, "b": UP})}
    result = PlacementProvider().check(wire({"stranded": {"replicas": "nope"}}), wire(news))
    assert [f.property for f in result.failures] == ["stranded"]
