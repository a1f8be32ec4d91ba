"""`outline`: a placement per deployment, whose structural diff names what `diff` says changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet
from modelplane.scheduling import Placement
from modelplane.scheduling.diff import diff, outline
from tests.scheduling.test_properties import CLASSES, SETTINGS, clusters, deployments, plan

DOCUMENT = {
    "version": 1,
    "replicas": [
        {"deployment": "ml/gang", "cluster": "a", "index": 0, "engines": {
            "coder": {"Worker": {"pool": "h200", "nodes": 2}, "Leader": {"pool": "h100", "nodes": 1}}}},
        {"deployment": "ml/gang", "cluster": "a", "index": 1, "engines": {
            "coder": {"Leader": {"pool": "h100", "nodes": 1}, "Worker": {"pool": "h100", "nodes": 2}}}},
        {"deployment": "ml/pd", "cluster": "b", "index": 0, "engines": {
            "prefill": {"Standalone": {"pool": "h100", "nodes": 1}},
            "decode": {"Standalone": {"pool": "h200", "nodes": 1}}}},
    ],
    "deployments": {"ml/gang": {"desired": 2, "scheduled": 2}, "ml/huge": {"desired": 1, "scheduled": 0,
                                                                            "reasons": ["no room"]},
                    "ml/pd": {"desired": 1, "scheduled": 1}},
}


def test_each_deployment_shows_its_count_and_each_replica_where_its_engines_run() -> None:
    assert outline(Placement.from_json(DOCUMENT)) == {
        "ml/gang": {"scheduled": "2/2", "replicas": {"a#0": "coder: Leader=h100 Worker=h200",
                                                         "a#1": "coder: Leader=h100 Worker=h100"}},
        "ml/huge": {"scheduled": "0/1", "replicas": {}},
        "ml/pd": {"scheduled": "1/1", "replicas": {"b#0": "decode: h200, prefill: h100"}},
    }


def test_the_order_maps_come_back_in_does_not_change_the_outline() -> None:
    """The engine hands maps back with their keys sorted; check() sees both orders across runs."""
    reordered: dict[str, Any] = {**DOCUMENT, "replicas": [
        {**replica, "engines": {engine: dict(sorted(members.items(), reverse=True))
                                for engine, members in sorted(replica["engines"].items(), reverse=True)}}
        for replica in reversed(DOCUMENT["replicas"])]}
    assert outline(Placement.from_json(reordered)) == outline(Placement.from_json(DOCUMENT))


def changed_in_outline(before: Placement, after: Placement) -> set[tuple[str, str]]:
    """(deployment, slot) of every replica entry added, removed or changed between two outlines."""
    old, new = outline(before), outline(after)
    found = set()
    for key in old.keys() | new.keys():
        was, now = old.get(key, {}).get("replicas", {}), new.get(key, {}).get("replicas", {})
        found |= {(key, slot) for slot in was.keys() | now.keys() if was.get(slot) != now.get(slot)}
    return found


@SETTINGS
@given(clusters(), deployments(), clusters(), deployments(), st.booleans())
def test_the_outline_changes_exactly_where_diff_says_replicas_change(cs, ds, other_cs, other_ds, sticky) -> None:
    before = plan(cs, ds)
    after = plan(other_cs, other_ds, before if sticky else None)
    changes = diff(before, after, Fleet(clusters=tuple(cs), classes=CLASSES),
                   Fleet(clusters=tuple(other_cs), classes=CLASSES))
    by_diff = {(change.deployment, f"{replica.cluster}#{replica.index}")
               for change in changes.changed for replica in (change.before, change.after) if replica is not None}
    assert changed_in_outline(before, after) == by_diff
    counts = {key for key in outline(before).keys() | outline(after).keys()
              if outline(before).get(key, {}).get("scheduled") != outline(after).get(key, {}).get("scheduled")}
    assert counts <= {change.deployment for change in changes.deployments}
