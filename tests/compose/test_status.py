"""The status written back in control-cluster mode (`compose.status_documents`), computed on the objects recorded
from a real API server (tests/data/control-cluster) and placed by the real scheduler; every document
validates against the status schema of the generated CRDs, and the selector selects exactly the
serving pods compose renders."""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api.accepted import OUTPUT, read_record, record
from modelplane.api.served import Served, load_served
from modelplane.compose import render
from modelplane.compose.status_documents import serving_selector, status_key, statuses
from modelplane.scheduling import place
from tests.api import crd_schema
from tests.api.test_served import recorded_items

URL = "http://fleet.example/ml-team/qwen3/"


def served(replicas: int | None = None) -> Served:
    items = copy.deepcopy(recorded_items())
    for item in items:
        if replicas is not None and item["metadata"]["name"] == "qwen3-8b":
            item["spec"]["replicas"] = replicas
    return load_served(items, "control cluster")


def written(source: Served, gateway_address: str = "203.0.113.7") -> dict[str, dict[str, Any]]:
    placement = place(source.manifests.fleet, source.manifests.workloads)
    return statuses(source.manifests, placement, source.observed, source.skipped, {"ml-team/qwen3": URL},
                    gateway_address, refused=source.refused, held=source.held)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_a_placed_deployment_reports_replicas_selector_clusters_pools_and_conditions() -> None:
    source = served()
    entry = written(source)["ModelDeployment/ml-team/qwen3-8b"]
    status = entry["status"]
    assert entry["uid"] == source.observed[("ModelDeployment", "ml-team", "qwen3-8b")].uid
    assert (status["observedGeneration"], status["replicas"], status["desiredReplicas"], status["ready"]) == (2, 2, 2, "2/2")
    assert status["clusters"] == "gke-us-central,onprem-us-east", "spread before pack"
    assert status["placements"] == [
        {"cluster": "gke-us-central", "index": 0, "members": [{"engine": "qwen3-8b", "role": "Standalone", "pool": "l4"}]},
        {"cluster": "onprem-us-east", "index": 0, "members": [{"engine": "qwen3-8b", "role": "Standalone", "pool": "h100"}]}]
    assert conditions(status) == {"Scheduled": ("True", "AllReplicasScheduled"), "Ready": ("True", "ReplicasApplied")}
    assert all(c["observedGeneration"] == 2 and "lastTransitionTime" not in c for c in status["conditions"])
    assert status["selector"] == serving_selector("qwen3-8b")


def test_a_short_deployment_says_why_in_its_scheduled_condition() -> None:
    status = written(served(replicas=30))["ModelDeployment/ml-team/qwen3-8b"]["status"]
    assert (status["replicas"], status["desiredReplicas"], status["ready"]) == (20, 30, "20/30")
    assert conditions(status) == {"Scheduled": ("False", "InsufficientCapacity"), "Ready": ("False", "ReplicasShort")}
    scheduled = status["conditions"][0]["message"]
    assert scheduled.startswith("20/30 replicas scheduled; 0/2 clusters can host another replica of ml-team/qwen3-8b")


def test_services_report_their_url_and_the_gateway_its_address() -> None:
    found = written(served())
    assert found["ModelService/ml-team/qwen3"]["status"]["url"] == URL
    assert conditions(found["ModelService/ml-team/qwen3"]["status"]) == {"Ready": ("True", "RouteApplied")}
    assert found["InferenceGateway/default"]["status"] == {"address": "203.0.113.7"}
    assert written(served(), gateway_address="")["InferenceGateway/default"]["status"] == {}, \
        "no address yet: nothing to say (which clears a refusal an earlier run wrote)"


def test_a_skipped_object_reports_why_and_is_otherwise_left_out() -> None:
    found = written(served())
    typo = found["ModelDeployment/ml-team/typo"]["status"]
    assert conditions(typo) == {"Scheduled": ("False", "InvalidSpec"), "Ready": ("False", "InvalidSpec")}
    assert typo["conditions"][0]["message"].startswith("spec.engines[0].members[0].nodeSelector.devices[0].selectors[0]"
                                                       ".cel: invalid CEL selector")
    assert "replicas" not in typo
    coder = found["ModelDeployment/ml-team/coder"]["status"]
    assert conditions(coder) == {"Scheduled": ("False", "DependencyRefused"), "Ready": ("False", "DependencyRefused")}
    assert coder["conditions"][0]["message"] == "spec.modelCacheRef.name: ModelCache ml-team/coder is refused"
    cache = found["ModelCache/ml-team/coder"]["status"]
    assert conditions(cache) == {"Ready": ("False", "InvalidSpec")}
    assert cache["conditions"][0]["message"].startswith("spec.huggingFace.repo: 'Qwen Qwen3-Coder-30B' is not a")


def test_keys_are_sorted_and_every_status_fits_its_crd_schema() -> None:
    """(The recorded cache's spec is the one the loader refuses, which today's CRD refuses too.)"""
    found = written(served(replicas=30))
    assert list(found) == sorted(found) == [status_key("InferenceClass", "", "gke-l4-1x-g2"),
                                            "InferenceClass/hgx-h100-8x", "InferenceCluster/gke-us-central",
                                            "InferenceCluster/onprem-us-east",
                                            status_key("InferenceGateway", "", "default"),
                                            "ModelCache/ml-team/coder", "ModelDeployment/ml-team/coder",
                                            "ModelDeployment/ml-team/qwen3-8b", "ModelDeployment/ml-team/typo",
                                            "ModelService/ml-team/qwen3"]
    for key, entry in found.items():
        kind, _, rest = key.partition("/")
        namespace, _, name = rest.rpartition("/")
        obj = next(i for i in recorded_items() if i["kind"] == kind and i["metadata"]["name"] == name)
        with_status = {**{k: obj[k] for k in ("apiVersion", "kind", "spec")},
                       "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                       "status": entry["status"]}
        problems = crd_schema.problems(with_status)
        assert [p for p in problems if not (key == "ModelCache/ml-team/coder" and p.startswith("spec."))] == [], key


def _matches(selector: str, labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, _, value in (part.partition("=") for part in selector.split(",")))


def test_the_selector_selects_the_serving_pods_compose_renders_and_no_others() -> None:
    source = served()
    rendered = render(source.manifests, place(source.manifests.fleet, source.manifests.workloads))
    selector = serving_selector("qwen3-8b")
    pods = [m["spec"]["template"]["metadata"]["labels"] for objects in rendered.clusters.values() for m in objects
            if m["kind"] == "Deployment"]
    serving = [labels for labels in pods if labels.get("modelplane.ai/deployment") == "qwen3-8b"]
    assert len(serving) == 2 and all(_matches(selector, labels) for labels in serving)
    assert not any(_matches(selector, labels) for labels in pods if labels not in serving)


def test_a_held_deployment_reports_what_it_runs_and_why_its_edit_waits() -> None:
    items = copy.deepcopy(recorded_items())
    accepted = read_record({OUTPUT: record(load_served(items, "c").accepted)})
    qwen = next(i for i in items if i["metadata"]["name"] == "qwen3-8b")
    qwen["spec"]["modelCacheRef"], qwen["spec"]["replicas"] = {"name": "missing"}, 4
    found = written(load_served(items, "control cluster", accepted=accepted))["ModelDeployment/ml-team/qwen3-8b"]
    status = found["status"]
    assert (status["replicas"], status["ready"]) == (2, "2/2"), "the accepted spec's two replicas, not the edit's four"
    assert conditions(status) == {"Scheduled": ("True", "AllReplicasScheduled"), "Ready": ("False", "InvalidSpec")}
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["message"].startswith("spec.modelCacheRef.name: ModelCache 'missing' is not defined")
    assert ready["message"].endswith("; planned with its last accepted spec until it is fixed, so nothing it runs "
                                     "changes")
    with_status = {**{k: qwen[k] for k in ("apiVersion", "kind", "spec")}, "metadata": {"name": "qwen3-8b",
                   "namespace": "ml-team"}, "status": status}
    assert crd_schema.problems(with_status) == []
