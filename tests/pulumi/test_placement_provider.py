"""The placement dynamic provider, driven in the Pulumi engine's order (DESIGN section 3).

Each `up` is what the engine does for a dynamic resource: `check(olds, news)` with the previous
checked inputs as olds (none on the first run), then `create` for a new resource, or `diff` and,
when it reports changes, `update`. Inputs cross a JSON round trip that turns every number into a
double, as the engine's protobuf Struct does. Expected placements follow from the scheduler's
rules (DESIGN section 4) on the multi-cloud demo fleet, whose first placement is:
    eks-us-west:    qwen3-8b#0 (a100), llama-70b-pd#0 (prefill h100, decode a100)
    gke-us-central: qwen-demo#0 (l4), qwen3-8b#0 (l4)
    onprem-us-east: kimi-k2-instruct#0, qwen3-coder#0 (frontier)
"""

from __future__ import annotations

import base64
import hashlib
import copy
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.rpc import UNKNOWN

from modelplane.api import dump_objects, load
from modelplane.pulumi.placement import (HIDDEN, OBSERVED, PLACEMENT_ID, SHOWN, STATE, PlacementProvider, digests,
                                         from_wire, objects_digest, objects_text)
from modelplane.scheduling.placement import PLANNER_VERSION
from modelplane.scheduling import Placement, place
from modelplane.scheduling.diff import Change, diff
from tests.pulumi.harness import updates

ROOT = Path(__file__).resolve().parents[2]
DEMO = dump_objects(load([ROOT / "examples" / "multi-cloud"]))
FIRST = {
    "ml-team/kimi-k2-instruct": [("onprem-us-east", 0)],
    "ml-team/llama-70b-pd": [("eks-us-west", 0)],
    "ml-team/qwen-demo": [("gke-us-central", 0)],
    "ml-team/qwen3-8b": [("eks-us-west", 0), ("gke-us-central", 0)],
    "ml-team/qwen3-coder": [("onprem-us-east", 0)],
}
Edit = Callable[[list[dict[str, Any]]], None]


def wire(value: Any) -> Any:
    """Through the engine: JSON, with every number a double."""
    return json.loads(json.dumps(value), parse_int=float)


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def edited(*edits: Edit) -> list[dict[str, Any]]:
    objects = copy.deepcopy(DEMO)
    for edit in edits:
        edit(objects)
    return objects


def scale(deployment: str, replicas: int) -> Edit:
    return lambda objects: find(objects, "ModelDeployment", deployment)["spec"].update(replicas=replicas)


def add_cluster(name: str, like: str) -> Edit:
    def edit(objects: list[dict[str, Any]]) -> None:
        cluster = copy.deepcopy(find(objects, "InferenceCluster", like))
        cluster["metadata"]["name"] = name
        objects.append(cluster)
    return edit


def remove_cluster(name: str) -> Edit:
    return lambda objects: objects.remove(find(objects, "InferenceCluster", name))


def taint(cluster: str, effect: str) -> Edit:
    return lambda objects: find(objects, "InferenceCluster", cluster)["spec"]["taints"].append(
        {"key": "maintenance", "effect": effect})


def change_args(deployment: str) -> Edit:
    def edit(objects: list[dict[str, Any]]) -> None:
        container = find(objects, "ModelDeployment", deployment)["spec"]["engines"][0]["members"][0]["template"]["spec"]
        container["containers"][0]["args"] = ["--model=Qwen/Qwen2.5-1.5B-Instruct"]
    return edit


def huge(objects: list[dict[str, Any]]) -> None:
    deployment = copy.deepcopy(find(objects, "ModelDeployment", "qwen-demo"))
    deployment["metadata"]["name"] = "huge"
    request = deployment["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]
    request["selectors"] = [{"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1000Gi")) >= 0'}]
    objects.append(deployment)


@dataclass
class Stack:
    """One stack's state for the placement resource, updated as the engine would."""

    provider: PlacementProvider = field(default_factory=PlacementProvider)
    state: dict[str, Any] | None = None
    calls: list[str] = field(default_factory=list)

    def up(self, objects: list[dict[str, Any]], strict: bool = False) -> Placement:
        news = wire({"objects": objects_text(objects), "strict": strict})
        self.calls.append("check")
        result = self.provider.check(wire(self.state["inputs"]) if self.state else {}, news)
        assert result.failures == []
        checked = wire(result.inputs)
        if self.state is None:
            self.calls.append("create")
            created = self.provider.create(checked)
            assert created.id == PLACEMENT_ID
            self.state = {"inputs": checked, "outputs": wire(created.outs)}
        else:
            self.calls.append("diff")
            answer = self.provider.diff(PLACEMENT_ID, self.state["outputs"], checked)
            assert answer.replaces == [] and not answer.delete_before_replace, "the placement is never replaced"
            if updates(answer, self.state["inputs"], checked):
                self.calls.append("update")
                self.state = {"inputs": checked, "outputs": wire(self.provider.update(PLACEMENT_ID,
                                                                                      self.state["outputs"],
                                                                                      checked).outs)}
        return Placement.from_json(json.loads(self.state["outputs"]["placement"]))


def slots(placement: Placement) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {key: [] for key in placement.deployments}
    for replica in placement.replicas:
        found[replica.deployment].append((replica.cluster, replica.index))
    return {key: sorted(value) for key, value in found.items()}


def test_first_run_creates_the_placement_the_cli_plans() -> None:
    stack = Stack()
    placement = stack.up(DEMO)
    assert stack.calls == ["check", "create"]
    assert slots(placement) == FIRST
    manifests = load([ROOT / "examples" / "multi-cloud"])
    assert placement == place(manifests.fleet, manifests.workloads).model_copy(update={"planner": PLANNER_VERSION})
    assert stack.state is not None and set(stack.state["outputs"]) == set(STATE) - {"observed", *OBSERVED,
                                                                                    "objectsDigest"}
    assert stack.state["inputs"]["objectsDigest"] == objects_digest(DEMO), "the next check() compares it"
    image = find(DEMO, "ModelDeployment", "qwen-demo")["spec"]["engines"][0]["members"][0]["template"]["spec"][
        "containers"][0]["image"]
    assert "objects" not in stack.state["inputs"] and image not in json.dumps(stack.state), "no copy of a manifest"


def test_the_digest_is_of_the_objects_canonical_json_whatever_their_key_order() -> None:
    reordered = [dict(reversed(list(obj.items()))) for obj in DEMO]
    assert objects_text(reordered) != objects_text(DEMO)
    assert objects_digest(reordered) == objects_digest(DEMO) == objects_digest(from_wire(wire(DEMO))) != objects_digest(DEMO[1:])
    canonical = json.dumps(DEMO, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert objects_digest(DEMO) == hashlib.sha256(canonical).hexdigest()


@pytest.mark.parametrize("objects", [DEMO, "not json", json.dumps({"kind": "ModelDeployment"}), 7])
def test_objects_that_are_not_the_json_text_of_a_list_fail_check(objects: Any) -> None:
    result = PlacementProvider().check({}, wire({"objects": objects, "strict": False}))
    assert [f.property for f in result.failures] == ["objects"]
    assert "JSON text of a list" in result.failures[0].reason and "placement" not in result.inputs


def test_a_state_of_the_previous_version_upgrades_without_planning_and_is_never_replaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack last updated by the version whose state kept every object in the inputs and the placement
    document as data: the digest of those objects stands for them, the document is read as it is, the
    unchanged path is taken, and the next state holds the digest and the document's text; diff asks
    for an update of the state alone, never a replacement."""
    provider = PlacementProvider()
    checked = wire(provider.check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs)
    document = json.loads(checked["placement"])
    earlier = {**{k: v for k, v in checked.items() if k != "objectsDigest"}, "objects": wire(DEMO),
               "placement": wire(document)}
    earlier_outputs = {k: v for k, v in earlier.items() if k != "objects"}

    def no_planning(*_: Any) -> None:
        raise AssertionError("check() planned although nothing changed")

    monkeypatch.setattr("modelplane.pulumi.placement.place", no_planning)
    again = provider.check(earlier, wire({"objects": objects_text(DEMO), "strict": False}))
    assert again.failures == [] and wire(again.inputs) == checked
    answer = provider.diff(PLACEMENT_ID, earlier_outputs, wire(again.inputs))
    assert (answer.changes, answer.replaces, answer.delete_before_replace) == (None, [], False)
    assert provider.diff(PLACEMENT_ID, wire(provider.create(checked).outs), wire(again.inputs)).changes is False


def test_a_placement_text_that_does_not_parse_fails_instead_of_dropping_every_pin() -> None:
    result = PlacementProvider().check({"placement": "{not json"}, wire({"objects": objects_text(DEMO), "strict": False}))
    assert [f.property for f in result.failures] == ["placement"]
    assert "cannot be read" in result.failures[0].reason and "not JSON text" in result.failures[0].reason


def test_unchanged_manifests_diff_to_no_change() -> None:
    stack = Stack()
    stack.up(DEMO)
    assert slots(stack.up(DEMO)) == FIRST
    assert stack.calls == ["check", "create", "check", "diff"]


@dataclass(frozen=True)
class Case:
    name: str
    edits: tuple[Edit, ...]
    want: Callable[[dict[str, list[tuple[str, int]]]], bool]


def kept(expected: dict[str, list[tuple[str, int]]]) -> Callable[[dict[str, list[tuple[str, int]]]], bool]:
    """Every replica listed in `expected` is still where it was."""
    return lambda got: all(set(where) <= set(got.get(key, [])) for key, where in expected.items())


def without(cluster: str) -> dict[str, list[tuple[str, int]]]:
    return {key: [slot for slot in where if slot[0] != cluster] for key, where in FIRST.items()}


CASES = [
    Case("adding a cluster moves nothing", (add_cluster("gke-europe", like="gke-us-central"),),
         lambda got: got == FIRST),
    Case("changing an unrelated deployment moves nothing", (change_args("qwen-demo"),),
         lambda got: got == FIRST),
    Case("scaling up keeps the existing replicas and adds one", (scale("qwen3-8b", 3),),
         lambda got: kept(FIRST)(got) and len(got["ml-team/qwen3-8b"]) == 3),
    Case("scaling down keeps one of the existing replicas and every other deployment",
         (scale("qwen3-8b", 1),),
         lambda got: len(got["ml-team/qwen3-8b"]) == 1 and set(got["ml-team/qwen3-8b"]) < set(FIRST["ml-team/qwen3-8b"])
         and all(got[key] == FIRST[key] for key in FIRST if key != "ml-team/qwen3-8b")),
    Case("deleting a cluster re-places its replicas on the rest of the fleet", (remove_cluster("eks-us-west"),),
         lambda got: kept(without("eks-us-west"))(got) and got["ml-team/qwen3-8b"] == [("gke-us-central", 0),
                                                                                    ("gke-us-central", 1)]
         and got["ml-team/llama-70b-pd"] == []),
    Case("a NoExecute taint drains the cluster and moves what fits", (taint("gke-us-central", "NoExecute"),),
         lambda got: kept(without("gke-us-central"))(got)
         and not any(cluster == "gke-us-central" for where in got.values() for cluster, _ in where)),
    Case("a NoSchedule taint keeps the cluster's replicas", (taint("gke-us-central", "NoSchedule"),),
         lambda got: got == FIRST),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_second_run_is_sticky(case: Case) -> None:
    stack = Stack()
    stack.up(DEMO)
    got = slots(stack.up(edited(*case.edits)))
    assert case.want(got), got
    assert stack.calls[:3] == ["check", "create", "check"] and stack.calls[3] == "diff"


def test_scaling_up_then_down_returns_to_the_first_placement() -> None:
    stack = Stack()
    stack.up(DEMO)
    stack.up(edited(scale("qwen3-8b", 3)))
    assert slots(stack.up(DEMO)) == FIRST


def test_a_cluster_that_comes_back_gets_nothing_back() -> None:
    """Stickiness is to where replicas run now: a re-added cluster does not pull replicas back."""
    stack = Stack()
    stack.up(DEMO)
    moved = slots(stack.up(edited(remove_cluster("eks-us-west"))))
    assert slots(stack.up(DEMO))["ml-team/qwen3-8b"] == moved["ml-team/qwen3-8b"]


def test_diff_leaves_a_change_for_the_engine_to_detail_and_never_replaces() -> None:
    """A change is answered "unknown" (None): the engine then diffs the inputs itself, and that
    detailed diff is what `--diff` prints; no change is answered as such."""
    provider = PlacementProvider()
    first = provider.check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs
    second = provider.check(first, wire({"objects": objects_text(edited(scale("qwen3-8b", 3))), "strict": False})).inputs
    changed = provider.diff(PLACEMENT_ID, wire(first), wire(second))
    assert (changed.changes, changed.replaces, changed.delete_before_replace) == (None, [], False)
    same = provider.diff(PLACEMENT_ID, wire(first), wire(provider.check(first, wire({"objects": objects_text(DEMO),
                                                                                      "strict": False})).inputs))
    assert (same.changes, same.replaces) == (False, [])


MISSING = object()


def shown(olds: dict[str, Any], news: dict[str, Any]) -> set[str]:
    """What `pulumi preview --diff` prints for the updated resource: the engine's detailed diff of the
    old and new inputs (every changed leaf), a `hide_diffs` property as one `(hidden)` line."""
    paths: set[str] = set()

    def walk(path: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in old.keys() | new.keys():
                walk(f"{path}[{key}]", old.get(key, MISSING), new.get(key, MISSING))
        elif old != new:
            paths.add(path)

    for key in olds.keys() | news.keys():
        if key in HIDDEN:
            paths |= {f"{key} (hidden)"} if olds.get(key) != news.get(key) else set()
        else:
            walk(key, olds.get(key, MISSING), news.get(key, MISSING))
    return paths


def checked_pair(*edits: Edit) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checked inputs of a first run on the demo and of the next run with `edits`, off the wire."""
    provider = PlacementProvider()
    first = wire(provider.check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs)
    return first, wire(provider.check(first, wire({"objects": objects_text(edited(*edits)), "strict": False})).inputs)


def test_a_scale_up_shows_the_new_replica_and_the_edited_manifest_only() -> None:
    first, second = checked_pair(scale("qwen3-8b", 3))
    fleet = load([ROOT / "examples" / "multi-cloud"]).fleet
    [created] = diff(Placement.from_json(json.loads(first["placement"])), Placement.from_json(json.loads(second["placement"])),
                     fleet, fleet).of(Change.CREATE)
    assert created.after is not None
    assert shown(first, second) == {
        "objectsDigest (hidden)", "placement (hidden)", "manifests[ModelDeployment ml-team/qwen3-8b]",
        "deployments[ml-team/qwen3-8b][scheduled]",
        f"deployments[ml-team/qwen3-8b][replicas][{created.after.cluster}#{created.after.index}]"}
    assert second["deployments"]["ml-team/qwen3-8b"]["scheduled"] == "3/3"


def test_an_edit_that_moves_nothing_shows_only_the_edited_manifest() -> None:
    assert shown(*checked_pair(change_args("qwen-demo"))) == {
        "objectsDigest (hidden)", "manifests[ModelDeployment ml-team/qwen-demo]"}


def test_the_outputs_hold_no_copy_of_the_objects_and_diff_still_sees_an_edit_that_moves_nothing() -> None:
    provider = PlacementProvider()
    first, second = checked_pair(change_args("qwen-demo"))
    outputs = wire(provider.create(first).outs)
    assert "objects" not in outputs and outputs["manifests"] == first["manifests"]
    assert provider.diff(PLACEMENT_ID, outputs, second).changes is None, "the edited object's digest changed"
    assert provider.diff(PLACEMENT_ID, outputs, first).changes is False


def test_a_drain_shows_the_replicas_that_leave_and_where_they_land() -> None:
    first, second = checked_pair(taint("gke-us-central", "NoExecute"))
    replicas = {path for path in shown(first, second) if path.endswith("]") and "[replicas]" in path}
    assert replicas == {"deployments[ml-team/qwen-demo][replicas][gke-us-central#0]",
                        "deployments[ml-team/qwen3-8b][replicas][gke-us-central#0]",
                        "deployments[ml-team/qwen3-8b][replicas][eks-us-west#1]"}, replicas
    assert "manifests[InferenceCluster gke-us-central]" in shown(first, second)


def test_the_digests_name_every_object_and_change_with_any_field_of_one() -> None:
    before = digests(DEMO)
    assert len(before) == len(DEMO) and "InferenceCluster eks-us-west" in before
    after = digests(edited(change_args("qwen-demo")))
    assert {key for key in before if before[key] != after[key]} == {"ModelDeployment ml-team/qwen-demo"}
    assert all(len(value) == 12 for value in after.values())


def test_delete_is_a_no_op() -> None:
    provider = PlacementProvider()
    assert provider.delete(PLACEMENT_ID, provider.check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs) is None


def test_check_reports_a_manifest_problem_at_its_field_path() -> None:
    def bad_count(objects: list[dict[str, Any]]) -> None:
        find(objects, "ModelDeployment", "qwen-demo")["spec"]["engines"][0]["members"][0]["nodeSelector"][
            "devices"][0]["count"] = 0
    objects = edited(bad_count)
    index = objects.index(find(objects, "ModelDeployment", "qwen-demo"))
    result = PlacementProvider().check({}, wire({"objects": objects_text(objects), "strict": False}))
    assert [(f.property, f.reason) for f in result.failures] == [(
        f"objects[{index}].spec.engines[0].members[0].nodeSelector.devices[0].count",
        "ModelDeployment ml-team/qwen-demo: must be at least 1; got int 0")]
    assert "placement" not in result.inputs


def test_strict_mode_fails_check_for_an_unschedulable_deployment() -> None:
    provider = PlacementProvider()
    lenient = provider.check({}, wire({"objects": objects_text(edited(huge)), "strict": False}))
    assert lenient.failures == []
    status = Placement.from_json(json.loads(lenient.inputs["placement"])).deployments["ml-team/huge"]
    assert (status.scheduled, status.desired) == (0, 1) and status.reasons[0].startswith("0/3 clusters")
    strict = provider.check({}, wire({"objects": objects_text(edited(huge)), "strict": True}))
    assert [f.property for f in strict.failures] == ["placement.deployments['ml-team/huge']"]
    assert strict.failures[0].reason.startswith("strict mode: ml-team/huge is short (0/1 replicas scheduled): 0/3")


def test_unknown_inputs_at_preview_leave_the_placement_unknown() -> None:
    result = PlacementProvider().check({}, {"objects": UNKNOWN, "strict": False})
    assert result.failures == [] and "placement" not in result.inputs


def test_an_unreadable_previous_placement_fails_instead_of_dropping_every_pin() -> None:
    result = PlacementProvider().check({"placement": {"version": 7}}, wire({"objects": objects_text(DEMO), "strict": False}))
    assert [f.property for f in result.failures] == ["placement"]
    assert "cannot be read" in result.failures[0].reason


def test_the_provider_is_serialized_by_reference() -> None:
    pickled = base64.b64decode(serialize_provider(PlacementProvider()))
    assert b"modelplane.pulumi.placement" in pickled and b"PlacementProvider" in pickled
    assert len(pickled) < 200, "a by-reference pickle names the class; it carries no code"
    loaded = subprocess.run(
        [sys.executable, "-c", "import base64, sys, dill; p = dill.loads(base64.b64decode(sys.argv[1])); "
                               "print(type(p).__module__, type(p).__name__)",
         base64.b64encode(pickled).decode()], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.split() == ["modelplane.pulumi.placement", "PlacementProvider"]


def test_unchanged_inputs_return_the_previous_placement_without_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    """check() on unchanged inputs returns the olds' placement as it is: `place` is pure and
    re-planning its own output moves nothing, so planning again would give the same document."""
    provider = PlacementProvider()
    first = provider.check({}, wire({"objects": objects_text(edited(huge)), "strict": False}))
    olds = wire(first.inputs)

    def no_planning(*_: Any) -> None:
        raise AssertionError("check() planned although nothing changed")

    monkeypatch.setattr("modelplane.pulumi.placement.place", no_planning)
    again = provider.check(olds, wire({"objects": objects_text(edited(huge)), "strict": False}))
    assert (again.failures, again.inputs) == ([], olds)
    strict_olds = {**olds, "strict": True}
    strict = provider.check(strict_olds, wire({"objects": objects_text(edited(huge)), "strict": True}))
    assert [f.property for f in strict.failures] == ["placement.deployments['ml-team/huge']"]
    with pytest.raises(AssertionError, match="planned although nothing changed"):
        provider.check(olds, wire({"objects": objects_text(edited(huge, scale("qwen-demo", 2))), "strict": False}))


def test_a_state_without_the_shown_properties_gets_them_without_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack last updated before `deployments` and `manifests` existed: its unchanged inputs still
    take the path that does not plan, and the two properties are computed from the state."""
    provider = PlacementProvider()
    first = wire(provider.check({}, wire({"objects": objects_text(DEMO), "strict": False})).inputs)
    older = {key: value for key, value in first.items() if key not in SHOWN}

    def no_planning(*_: Any) -> None:
        raise AssertionError("check() planned although nothing changed")

    monkeypatch.setattr("modelplane.pulumi.placement.place", no_planning)
    again = provider.check(older, wire({"objects": objects_text(DEMO), "strict": False}))
    assert again.failures == [] and wire(again.inputs) == first
