"""The Placement provider checks the state every run (issue 22): a previous placement that no longer
holds under unchanged inputs, or that another planner version wrote, is planned again stickily, and
`corrections` says what was wrong. Expected values are derived by hand from examples/multi-cloud:
pool gke-us-central/l4 holds 4 nodes (maxNodeCount) and each qwen replica there takes 1 whole node."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from modelplane.pulumi.placement import PlacementProvider, objects_text
from modelplane.scheduling import Placement
from modelplane.scheduling.placement import PLANNER_VERSION
from tests.pulumi.test_placement_provider import DEMO, wire


def first_run() -> dict[str, Any]:
    return wire(PlacementProvider().check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs)


def document(checked: dict[str, Any]) -> dict[str, Any]:
    """The placement document of checked inputs (its JSON text parsed)."""
    return json.loads(checked["placement"])


def replica_of(document: dict[str, Any], deployment: str, cluster: str) -> dict[str, Any]:
    return next(r for r in document["replicas"] if (r["deployment"], r["cluster"]) == (deployment, cluster))


def test_a_state_that_overcommits_a_pool_is_planned_again_and_every_valid_replica_stays() -> None:
    olds = first_run()
    assert olds["corrections"] == [] and document(olds)["planner"] == PLANNER_VERSION
    held = document(olds)
    demo = replica_of(held, "ml-team/qwen-demo", "gke-us-central")
    # five more qwen-demo replicas on l4: 6 qwen-demo + 1 qwen3-8b nodes on a pool of 4
    held["replicas"] += [{**copy.deepcopy(demo), "index": index} for index in range(1, 6)]
    held["deployments"]["ml-team/qwen-demo"]["scheduled"] = 6
    edited = {**olds, "placement": json.dumps(held)}
    checked = PlacementProvider().check(edited, wire({"objects": objects_text(DEMO), "strict": False}))
    assert checked.failures == []
    corrections = checked.inputs["corrections"]
    assert "ml-team/qwen-demo: holds 6 replicas and wants 1" in corrections
    assert any(c.startswith("ml-team/qwen-demo gke-us-central#") and "gke-us-central/l4 cannot hold it" in c
               for c in corrections), corrections
    # planned again with the edited state as previous: the replicas that held are exactly where they were
    assert Placement.from_json(document(checked.inputs)) == Placement.from_json(document(olds))


def test_a_document_whose_recorded_cost_is_not_the_specs_is_corrected() -> None:
    olds = first_run()
    held = document(olds)
    replica_of(held, "ml-team/qwen-demo", "gke-us-central")["engines"]["qwen"]["Standalone"]["nodes"] = 6
    edited = {**olds, "placement": json.dumps(held)}
    checked = PlacementProvider().check(edited, wire({"objects": objects_text(DEMO), "strict": False}))
    assert checked.inputs["corrections"] == [
        "ml-team/qwen-demo gke-us-central#0: the document's pools, costs or requests are not what the current "
        "spec gives"]
    assert Placement.from_json(document(checked.inputs)) == Placement.from_json(document(olds))


def test_another_planner_version_plans_again_stickily(monkeypatch: pytest.MonkeyPatch) -> None:
    olds = first_run()
    held = document(olds)
    del held["planner"]  # what every stack written before the version was recorded holds
    older = {**olds, "placement": json.dumps(held)}
    planned: list[int] = []
    from modelplane.pulumi import placement as module

    real = module.place
    monkeypatch.setattr(module, "place", lambda *args: planned.append(1) or real(*args))
    checked = PlacementProvider().check(older, wire({"objects": objects_text(DEMO), "strict": False}))
    assert planned == [1]
    assert checked.inputs["corrections"] == [
        f"the placement was written by planner version unknown, this is version {PLANNER_VERSION}: planned "
        "again, every replica that holds stays"]
    assert document(checked.inputs) == document(olds)  # nothing moved, and the version is recorded


def test_a_placement_that_holds_is_returned_as_it_is_without_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    olds = first_run()
    monkeypatch.setattr("modelplane.pulumi.placement.place", lambda *_: pytest.fail("planned a placement that held"))
    checked = PlacementProvider().check(olds, wire({"objects": objects_text(DEMO), "strict": False}))
    assert (checked.failures, wire(checked.inputs)) == ([], olds)
