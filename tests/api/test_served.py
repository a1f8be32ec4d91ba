"""Control-cluster objects -> Manifests (`api.served`), on responses recorded from a real API server
(tests/data/control-cluster/README.md says how): what a manifest keeps, and one bad object skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import CONTROL_CLUSTER, ManifestErrors, Severity
from modelplane.api.served import LAST_APPLIED, Observed, load_served, manifest_form

RECORDED = Path(__file__).resolve().parents[1] / "data" / "control-cluster"
PLURALS = ("inferenceclasses", "inferenceclusters", "inferencegateways", "modeldeployments", "modelcaches",
           "modelservices", "modelendpoints")


def recorded_items() -> list[dict[str, Any]]:
    return [item for plural in PLURALS for item in json.loads((RECORDED / f"{plural}.json").read_text())["items"]]


def deployment(name: str) -> dict[str, Any]:
    return next(item for item in recorded_items() if item["kind"] == "ModelDeployment" and item["metadata"]["name"] == name)


def test_a_manifest_keeps_what_users_write_and_nothing_the_server_adds() -> None:
    item = deployment("qwen3-8b")
    assert LAST_APPLIED in item["metadata"]["annotations"] and item["status"] and item["metadata"]["managedFields"]
    form = manifest_form(item)
    assert form == {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelDeployment",
                    "metadata": {"name": "qwen3-8b", "namespace": "ml-team"}, "spec": item["spec"]}


def test_the_valid_objects_load_with_the_servers_generation_and_uid() -> None:
    served = load_served(recorded_items(), "control cluster")
    assert served.manifests.counts() == {"InferenceClass": 2, "InferenceCluster": 2, "InferenceGateway": 1,
                                         "ModelDeployment": 1, "ModelService": 1}
    qwen = served.manifests.workloads.deployment("ml-team/qwen3-8b")
    assert qwen is not None and qwen.spec.replicas == 2, "kubectl scale set spec.replicas"
    assert qwen.status is None, "status is output, never input"
    key = ("ModelDeployment", "ml-team", "qwen3-8b")
    assert served.observed[key] == Observed(deployment("qwen3-8b")["metadata"]["uid"], 2)
    assert len(served.observed) == 10, "every object read: seven valid, three skipped"


def test_an_invalid_object_is_skipped_with_a_warning_and_so_is_what_needs_it() -> None:
    served = load_served(recorded_items(), "control cluster")
    assert sorted(served.skipped) == [("ModelCache", "ml-team", "coder"), ("ModelDeployment", "ml-team", "coder"),
                                      ("ModelDeployment", "ml-team", "typo")]
    typo = served.skipped[("ModelDeployment", "ml-team", "typo")]
    assert [str(p) for p in typo] == [
        "control cluster: ModelDeployment ml-team/typo: spec.engines[0].members[0].nodeSelector.devices[0]."
        "selectors[0].cel: " + typo[0].message]
    assert "compareTo" in typo[0].message
    cache = served.skipped[("ModelDeployment", "ml-team", "coder")]
    assert [p.path for p in cache] == ["spec.modelCacheRef.name"]
    warnings = [str(w) for w in served.manifests.warnings]
    assert all(w.startswith("control cluster: warning: ") for w in warnings)
    assert "control cluster: warning: ModelDeployment ml-team/typo: skipped: the rest of the fleet converges " \
           "without this ModelDeployment until it is fixed (stack config modelplane:strict makes this an error)" in warnings
    assert all(w.severity is Severity.WARNING for w in served.manifests.warnings)


def test_strict_mode_fails_on_the_first_round_of_errors() -> None:
    with pytest.raises(ManifestErrors) as refused:
        load_served(recorded_items(), "control cluster", strict=True)
    assert sorted((p.kind, p.name) for p in refused.value.errors) == [("ModelCache", "coder"),
                                                                       ("ModelDeployment", "typo")]
    assert all(p.line == 0 for p in refused.value.errors)


def test_the_result_does_not_depend_on_the_order_the_server_lists_in() -> None:
    items = recorded_items()
    assert load_served(items, "c").manifests.objects() == load_served(items[::-1], "c").manifests.objects()


@pytest.mark.parametrize(("spec", "host"), [({"cluster": "gke-us-central"}, "gke-us-central"),
                                            ({"backend": "Traefik"}, CONTROL_CLUSTER)],
                         ids=["a named cluster", "no spec.cluster: the control cluster the objects came from"])
def test_a_gateway_from_the_control_cluster_runs_where_its_spec_says(spec: dict[str, Any], host: str) -> None:
    items = recorded_items()
    next(item for item in items if item["kind"] == "InferenceGateway")["spec"] = {**spec, "plainHTTP": True}
    served = load_served(items, "control cluster", strict=False)
    assert served.manifests.fleet.gateway is not None and served.manifests.fleet.gateway.host == host
    assert ("InferenceGateway", "", "default") not in served.skipped
