"""A refused control-cluster object is planned with its last accepted version (`api.served`, `api.accepted`).

The objects are the ones recorded from a real API server (tests/api/test_served.py); each case edits
them the way a platform engineer would by mistake and checks what the run plans with: the accepted
version of the refused object and of everything referring to it, nothing of what they own dropped,
and a run that stops rather than guess when holding is impossible.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from modelplane.api import ManifestErrors
from modelplane.api.accepted import NOTHING, OUTPUT, Accepted, read_record, record
from modelplane.api.served import Served, load_served, references
from tests.api.test_served import recorded_items

CLASS = ("InferenceClass", "", "gke-l4-1x-g2")
GKE = ("InferenceCluster", "", "gke-us-central")
ONPREM = ("InferenceCluster", "", "onprem-us-east")
GATEWAY = ("InferenceGateway", "", "default")
QWEN = ("ModelDeployment", "ml-team", "qwen3-8b")
SERVICE = ("ModelService", "ml-team", "qwen3")
CACHE = ("ModelCache", "ml-team", "coder")


def valid_items() -> list[dict[str, Any]]:
    """The recorded objects less the three the loader refuses (so every object is accepted once)."""
    refused = {("ModelDeployment", "typo"), ("ModelDeployment", "coder"), ("ModelCache", "coder")}
    return [item for item in recorded_items() if (item["kind"], item["metadata"]["name"]) not in refused]


def item(items: list[dict[str, Any]], key: tuple[str, str, str]) -> dict[str, Any]:
    return next(i for i in items if (i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"]) == key)


def accepted_by_a_run(items: list[dict[str, Any]]) -> Accepted:
    """What the next run reads back from the stack output this run exports."""
    served = load_served(items, "control cluster")
    return read_record({OUTPUT: record(served.accepted), "placement": {}})


def spec_of(served: Served, key: tuple[str, str, str]) -> dict[str, Any]:
    obj = next(o for o in served.manifests.objects() if (o.kind, o.metadata.namespace or "", o.metadata.name) == key)
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)["spec"]


def test_a_deployment_naming_a_missing_cache_is_planned_as_it_was() -> None:
    items = valid_items()
    accepted = accepted_by_a_run(items)
    edited = copy.deepcopy(items)
    qwen = item(edited, QWEN)
    qwen["spec"]["modelCacheRef"] = {"name": "missing"}
    qwen["spec"]["replicas"] = 5
    served = load_served(edited, "control cluster", accepted=accepted)
    assert spec_of(served, QWEN)["replicas"] == 2 and "modelCacheRef" not in spec_of(served, QWEN)
    assert [p.path for p in served.refused[QWEN]] == ["spec.modelCacheRef.name"]
    assert served.held == {QWEN: (QWEN,)} and served.skipped == {}
    assert sorted(served.manifests.counts().items()) == sorted(load_served(items, "c").manifests.counts().items())
    held = [str(w) for w in served.manifests.warnings if w.code == "held"]
    assert held == ["control cluster: warning: ModelDeployment ml-team/qwen3-8b: held: planned with its last accepted "
                    "version, so nothing it owns changes, because its current version is refused; fix that to apply "
                    "its changes"]
    assert json.loads(record(served.accepted)) == json.loads(record(load_served(items, "c").accepted)), \
        "the next run keeps the same accepted versions"


def test_a_class_the_loader_refuses_holds_its_clusters_and_the_gateway_on_them() -> None:
    items = valid_items()
    accepted = accepted_by_a_run(items)
    edited = copy.deepcopy(items)
    item(edited, CLASS)["spec"]["devices"][0]["capacity"] = {"memory": {"value": "80GB"}}  # issue 22's example
    gke = item(edited, GKE)
    gke["spec"]["nodePools"][0]["nodeCount"] = 3  # an edit of a dependent waits too
    item(edited, GATEWAY)["spec"]["port"] = 8080
    item(edited, ONPREM)["spec"]["nodePools"][0]["nodeCount"] = 3
    served = load_served(edited, "control cluster", accepted=accepted)
    assert set(served.refused) == {CLASS}
    assert "capacity" in served.refused[CLASS][0].path
    assert served.held == {CLASS: (CLASS,), GKE: (CLASS,), GATEWAY: (CLASS,)}
    assert spec_of(served, GKE)["nodePools"][0]["nodeCount"] == 1
    assert spec_of(served, GATEWAY)["port"] == 80
    assert served.manifests.fleet.cluster("gke-us-central") is not None and served.manifests.fleet.gateway is not None
    assert spec_of(served, ONPREM)["nodePools"][0]["nodeCount"] == 3, "an unrelated edit applies"
    gateway = next(str(w) for w in served.manifests.warnings if w.code == "held" and w.kind == "InferenceGateway")
    assert "because it refers to InferenceClass gke-l4-1x-g2, which is refused" in gateway


def test_fixing_the_edit_applies_it() -> None:
    items = valid_items()
    edited = copy.deepcopy(items)
    item(edited, QWEN)["spec"]["modelCacheRef"] = {"name": "missing"}
    held = load_served(edited, "c", accepted=accepted_by_a_run(items))
    fixed = copy.deepcopy(items)
    item(fixed, QWEN)["spec"]["replicas"] = 3
    served = load_served(fixed, "c", accepted=read_record({OUTPUT: record(held.accepted)}))
    assert spec_of(served, QWEN)["replicas"] == 3 and served.held == {} and served.refused == {}


def test_a_new_object_needing_a_refused_one_is_skipped_it_owns_nothing() -> None:
    items = valid_items()
    accepted = accepted_by_a_run(items)
    edited = copy.deepcopy(items)
    item(edited, CLASS)["spec"]["devices"][0]["capacity"] = {"memory": {"value": "80GB"}}
    new = copy.deepcopy(item(edited, GKE))
    new["metadata"]["name"] = "gke-us-west"
    edited.append(new)
    served = load_served(edited, "c", accepted=accepted)
    west = ("InferenceCluster", "", "gke-us-west")
    assert west not in served.held and [(p.path, p.message) for p in served.skipped[west]] == [
        ("spec.nodePools[0].className", "InferenceClass gke-l4-1x-g2 is refused")]
    assert served.manifests.fleet.cluster("gke-us-west") is None


def test_an_object_gone_from_the_source_is_gone() -> None:
    items = valid_items()
    accepted = accepted_by_a_run(items)
    edited = [i for i in copy.deepcopy(items) if i["kind"] != "ModelService"]
    served = load_served(edited, "c", accepted=accepted)
    assert served.manifests.workloads.services == () and SERVICE not in served.held


def test_a_refusal_the_accepted_version_cannot_survive_stops_the_run() -> None:
    items = valid_items()
    cache = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelCache",
             "metadata": {"name": "weights", "namespace": "ml-team"},
             "spec": {"source": "HuggingFace", "huggingFace": {"repo": "Qwen/Qwen3-8B", "sizeGiB": 20}}}
    with_cache = copy.deepcopy(items) + [cache]
    item(with_cache, QWEN)["spec"]["modelCacheRef"] = {"name": "weights"}
    accepted = accepted_by_a_run(with_cache)
    assert CACHE[0] in {key[0] for key in accepted.objects}
    without = [i for i in with_cache if i["kind"] != "ModelCache"]  # the cache deleted while still named
    with pytest.raises(ManifestErrors) as stopped:
        load_served(without, "control cluster", accepted=accepted)
    missing = "ModelCache 'weights' is not defined in namespace 'ml-team' (defined there: none)"
    assert [(p.subject, p.path, p.message) for p in stopped.value.errors] == [
        ("ModelDeployment ml-team/qwen3-8b", "spec.modelCacheRef.name", missing),
        ("ModelDeployment ml-team/qwen3-8b", "spec.modelCacheRef.name", "its last accepted version is refused too, so "
         "the run cannot keep it and stops (nothing changes): " + missing)]


def test_a_refusal_without_a_usable_record_stops_the_run() -> None:
    items = valid_items()
    unknown = read_record({"placement": {}})
    assert not unknown.known and "no acceptedObjects output" in unknown.why
    assert load_served(items, "c", accepted=unknown).held == {}, "nothing refused: the run goes on"
    edited = copy.deepcopy(items)
    item(edited, QWEN)["spec"]["modelCacheRef"] = {"name": "missing"}
    with pytest.raises(ManifestErrors, match="ModelDeployment ml-team/qwen3-8b: refused, and the run cannot keep what "
                                             "it owns because the stack's state has no acceptedObjects output"):
        load_served(edited, "c", accepted=unknown)


def test_strict_mode_still_fails_on_a_refusal() -> None:
    items = valid_items()
    edited = copy.deepcopy(items)
    item(edited, QWEN)["spec"]["modelCacheRef"] = {"name": "missing"}
    with pytest.raises(ManifestErrors):
        load_served(edited, "c", strict=True, accepted=accepted_by_a_run(items))


@pytest.mark.parametrize(("outputs", "why"), [
    (None, ""),
    ({}, ""),
    ({"placement": {}}, "no acceptedObjects output"),
    ({OUTPUT: "{"}, "is not JSON"),
    ({OUTPUT: 7}, "is not a version-1 record"),
    ({OUTPUT: json.dumps({"version": 2, "objects": []})}, "is not a version-1 record"),
    ({OUTPUT: json.dumps({"version": 1, "objects": [[]]})}, "object 0 is not an object"),
    ({OUTPUT: json.dumps({"version": 1, "objects": [{"apiVersion": "v1", "kind": "Secret",
                                                     "metadata": {"name": "x"}}]})}, "is not a modelplane.ai/v1alpha1"),
    ({OUTPUT: json.dumps({"version": 1, "objects": [{"apiVersion": "modelplane.ai/v1alpha1",
                                                     "kind": "ModelCache", "metadata": {"name": 3}}]})},
     "has no metadata.name"),
    ({OUTPUT: json.dumps({"version": 1, "objects": [{"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass",
                                                     "metadata": {"name": "a"}}] * 2})}, "holds InferenceClass a twice"),
])
def test_the_record_read_back_is_checked_not_trusted(outputs: dict[str, Any] | None, why: str) -> None:
    accepted = read_record(outputs)
    assert accepted.known is (why == "") and why in accepted.why
    assert accepted.objects == {}


def test_the_record_is_sorted_and_byte_stable() -> None:
    forms = load_served(valid_items(), "c").accepted
    assert record(forms) == record(reversed(forms))
    assert set(read_record({OUTPUT: record(forms)}).objects) == {
        (f["kind"], f["metadata"].get("namespace", ""), f["metadata"]["name"]) for f in forms}


@pytest.mark.parametrize(("form", "want"), [
    ({"kind": "InferenceCluster", "spec": {"nodePools": [{"className": "a"}, {"className": "a"}, {"className": 3}]}},
     {("InferenceClass", "", "a"): "spec.nodePools[0].className"}),
    ({"kind": "ModelDeployment", "metadata": {"namespace": "t"}, "spec": {"modelCacheRef": {"name": "c"}}},
     {("ModelCache", "t", "c"): "spec.modelCacheRef.name"}),
    ({"kind": "InferenceGateway", "spec": {"cluster": "east"}}, {("InferenceCluster", "", "east"): "spec.cluster"}),
    ({"kind": "InferenceGateway", "spec": "nonsense"}, {}),
    ({"kind": "ModelService", "spec": {"endpoints": []}}, {}),
])
def test_references_read_from_what_was_written(form: dict[str, Any], want: dict[Any, str]) -> None:
    assert references(form) == want
