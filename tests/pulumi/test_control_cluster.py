"""Control-cluster mode under Pulumi's mocks: the real program (`__main__.py`) reads its manifests from a
control cluster and writes their status back, against objects recorded from a real API server
(tests/data/control-cluster) that `recorded_api.RecordedCluster` serves to the real `kubernetes`
client. Preview writes nothing; up writes each status once; a change writes only what changed;
the reader's and the status provider's own rules are tested beside.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from modelplane.api.served import load_served
from modelplane.pulumi import control_cluster, status
from modelplane.pulumi.control_cluster import ControlCluster, ControlClusterError, connect, list_objects
from modelplane.pulumi.status import StatusProvider, parse_key, with_times, without_times
from tests.api.test_served import RECORDED, recorded_items
from tests.pulumi.harness import Engine, dev_config, is_secret, run_program, unwrap
from tests.pulumi.recorded_api import RecordedCluster

CONTROL_KUBECONFIG = "apiVersion: v1\nkind: Config\n# control-cluster-kubeconfig-5be1\n"
STATUS = "pulumi-python:dynamic/modelplane:Status"
SECRET = json.loads((RECORDED / "secret-onprem-us-east-kubeconfig.json").read_text())
QWEN = ("ModelDeployment", "ml-team", "qwen3-8b")


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordedCluster]:
    recorded = RecordedCluster(copy.deepcopy(recorded_items()), [SECRET])
    connected: list[str | None] = []

    def connect_recorded(kubeconfig: str | None) -> Any:
        connected.append(kubeconfig)
        return recorded.client()

    monkeypatch.setattr(control_cluster, "connect", connect_recorded)
    monkeypatch.setattr(status, "connect", connect_recorded)
    yield recorded
    assert set(connected) <= {CONTROL_KUBECONFIG}, "every connection uses the configured kubeconfig"


def cluster_config(**overrides: Any) -> tuple[dict[str, str], list[str]]:
    return dev_config(**{"modelplane:manifests": None, "modelplane:onpremKubeconfig": None,
                         "modelplane:source": "cluster", "modelplane:controlKubeconfig": {"secure": CONTROL_KUBECONFIG},
                         "modelplane:kubeconfigSecrets": ["onprem-us-east-kubeconfig"], **overrides})


def written(recorded: RecordedCluster) -> list[str]:
    return [write.path.removeprefix("/apis/modelplane.ai/v1alpha1/") for write in recorded.writes]


def status_of(recorded: RecordedCluster, kind: str, namespace: str, name: str) -> dict[str, Any]:
    obj = recorded.find(kind, namespace, name)
    assert obj is not None
    return obj.get("status", {})


def test_preview_reads_the_cluster_and_writes_nothing(cluster: RecordedCluster) -> None:
    run = run_program(Engine(preview=True), cluster_config())
    assert run.outputs["placement"]["ml-team/qwen3-8b"]["scheduled"] == "2/2", "kubectl scale's replicas"
    assert set(run.outputs["placement"]) == {"ml-team/qwen3-8b"}, "the invalid deployments are skipped"
    assert [r.name for r in run.engine.of_type(STATUS)] == ["modelplane-status"]
    assert cluster.writes == []
    skipped = [line for line in run.logs if ": skipped: the rest of the fleet converges" in line]
    assert sorted(line.split(":")[2].strip() for line in skipped) == [
        "ModelCache ml-team/coder", "ModelDeployment ml-team/coder", "ModelDeployment ml-team/typo"]


def test_up_writes_every_status_once_then_only_what_changed(cluster: RecordedCluster) -> None:
    engine = Engine()
    first = run_program(engine, cluster_config())
    assert sorted(written(cluster)) == [
        "inferenceclasses/gke-l4-1x-g2/status", "inferenceclasses/hgx-h100-8x/status",
        "inferenceclusters/gke-us-central/status", "inferenceclusters/onprem-us-east/status",  # observed capacity
        "inferencegateways/default/status", "namespaces/ml-team/modelcaches/coder/status",
        "namespaces/ml-team/modeldeployments/coder/status",
        "namespaces/ml-team/modeldeployments/qwen3-8b/status", "namespaces/ml-team/modeldeployments/typo/status",
        "namespaces/ml-team/modelservices/qwen3/status"]
    assert {write.content_type for write in cluster.writes} == {"application/json-patch+json"}
    qwen = status_of(cluster, *QWEN)
    assert (qwen["ready"], qwen["replicas"], qwen["observedGeneration"], qwen["clusters"]) == (
        "2/2", 2, 2, "gke-us-central,onprem-us-east")
    assert all(c["lastTransitionTime"] for c in qwen["conditions"])
    assert status_of(cluster, "ModelService", "ml-team", "qwen3")["url"] == "http://34.120.0.99/ml-team/qwen3/"
    assert status_of(cluster, "InferenceGateway", "", "default") == {"address": "34.120.0.99"}
    assert status_of(cluster, "ModelDeployment", "ml-team", "typo")["conditions"][0]["reason"] == "InvalidSpec"
    assert [(c["type"], c["status"], c["reason"]) for c in status_of(cluster, "ModelCache", "ml-team", "coder")[
        "conditions"]] == [("Ready", "False", "InvalidSpec")]
    assert [(c["type"], c["status"], c["reason"]) for c in status_of(cluster, "InferenceClass", "", "hgx-h100-8x")[
        "conditions"]] == [("Ready", "True", "SpecApplied")]
    assert first.outputs["placement"]["ml-team/qwen3-8b"]["scheduled"] == "2/2"

    cluster.writes.clear()
    run_program(Engine(state=copy.deepcopy(engine.state)), cluster_config())
    assert cluster.writes == [], "nothing changed: nothing written"

    for condition in qwen["conditions"]:
        condition["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    scaled = cluster.find(*QWEN)
    assert scaled is not None
    scaled["spec"]["replicas"], scaled["metadata"]["generation"] = 3, 3
    state = copy.deepcopy(engine.state)
    run_program(Engine(state=state), cluster_config())
    assert written(cluster) == ["namespaces/ml-team/modeldeployments/qwen3-8b/status"]
    qwen = status_of(cluster, *QWEN)
    assert (qwen["ready"], qwen["observedGeneration"]) == ("3/3", 3)
    assert {c["type"]: c["lastTransitionTime"] for c in qwen["conditions"]} == {
        "Scheduled": "2020-01-01T00:00:00Z", "Ready": "2020-01-01T00:00:00Z"}, "unchanged conditions keep their time"

    cluster.writes.clear()
    scaled["spec"]["replicas"], scaled["metadata"]["generation"] = 60, 4
    run_program(Engine(state=state), cluster_config())
    qwen = status_of(cluster, *QWEN)
    # 1-GPU replicas now share nodes (packing.py), so it takes more than 9 to run short.
    assert qwen["ready"] == "20/60"
    scheduled = next(c for c in qwen["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "InsufficientCapacity")
    assert scheduled["lastTransitionTime"] != "2020-01-01T00:00:00Z", "a changed condition gets the time it changed"


def test_the_kubeconfigs_stay_secret(cluster: RecordedCluster) -> None:
    run = run_program(Engine(), cluster_config())
    written_by = run.engine.of_type(STATUS)[0]
    assert is_secret(written_by.inputs["kubeconfig"]) and unwrap(written_by.inputs["kubeconfig"]) == CONTROL_KUBECONFIG
    onprem = next(r for r in run.engine.of_type("pulumi:providers:kubernetes") if r.name.startswith("modelplane:onprem-us-east"))
    assert is_secret(onprem.inputs["kubeconfig"])
    assert "recorded-onprem-kubeconfig" in unwrap(onprem.inputs["kubeconfig"]), "read from the Secret secretRef names"
    logged = "\n".join(run.logs)
    assert CONTROL_KUBECONFIG not in logged and "recorded-onprem-kubeconfig" not in logged


def test_strict_mode_fails_on_an_invalid_object(cluster: RecordedCluster) -> None:
    with pytest.raises(pulumi.RunError, match=r"2 error\(s\) in the control cluster's objects:\ncontrol cluster: "
                                              r"ModelCache ml-team/coder: spec.huggingFace.repo"):
        run_program(Engine(preview=True), cluster_config(**{"modelplane:strict": True}))


def test_a_secret_ref_outside_the_control_planes_list_is_refused(cluster: RecordedCluster) -> None:
    with pytest.raises(pulumi.RunError, match="names Secret 'onprem-us-east-kubeconfig', which the control plane may "
                                              "not read \\(it may read: modelplane-pulumi\\)"):
        run_program(Engine(preview=True), cluster_config(**{"modelplane:kubeconfigSecrets": ["modelplane-pulumi"]}))


def test_a_kubeconfig_secret_that_is_nowhere_is_an_error_naming_both_places(cluster: RecordedCluster) -> None:
    cluster.secrets.clear()
    with pytest.raises(pulumi.RunError, match="is neither on the control cluster nor in stack config; .* or: kubectl "
                                              "create secret generic onprem-us-east-kubeconfig -n modelplane-system"):
        run_program(Engine(preview=True), cluster_config())


def test_an_unknown_source_is_refused() -> None:
    with pytest.raises(pulumi.RunError, match="modelplane:source is 'git'; use files or cluster"):
        run_program(Engine(preview=True), dev_config(**{"modelplane:source": "git"}))


# The reader's errors, as the recorded cluster answers them.

@pytest.mark.parametrize("code,message", [
    (404, "the control cluster serves no inferenceclasses.modelplane.ai: install the modelplane CRDs with "
          "`modelplane crds | kubectl apply --server-side -f -`"),
    (403, "refused to show inferenceclasses.modelplane.ai (403 403): the workspace's ServiceAccount needs the "
          "modelplane reader role"),
    (500, "the control cluster answered 500 500 for inferenceclasses.modelplane.ai"),
])
def test_an_api_server_that_refuses_ends_the_run_with_what_to_do(code: int, message: str) -> None:
    with pytest.raises(ControlClusterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list_objects(RecordedCluster([], status_code=code).client())


def test_without_a_kubeconfig_outside_a_pod_the_error_names_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ControlClusterError, match="modelplane:controlKubeconfig is not set and this is not a pod"):
        connect(None)
    with pytest.raises(ControlClusterError, match="modelplane:controlKubeconfig names no usable cluster, user and"):
        connect("apiVersion: v1\nkind: Config\nclusters: []\n")


@pytest.mark.parametrize(("kubeconfig", "message"), [
    ("apiVersion: v1\nusers: [{name: a, user: {token: s3cr3t-t0ken}}\n  bad: [\n", "is not YAML (line 3, column 3)"),
    ("apiVersion: v1\nclusters: 5\nusers: [{name: a, user: {token: s3cr3t-t0ken}}]\n", "names no usable cluster"),
    ("apiVersion: v1\ncurrent-context: s3cr3t-t0ken\nusers: [{name: a, user: {token: s3cr3t-t0ken}}]\n",
     "names no usable cluster"),
])
def test_a_malformed_kubeconfig_error_quotes_none_of_it(kubeconfig: str, message: str) -> None:
    with pytest.raises(ControlClusterError) as raised:
        connect(kubeconfig)
    assert f"modelplane:controlKubeconfig {message}" in str(raised.value)
    assert "s3cr3t" not in str(raised.value) and "token" not in str(raised.value)


def test_a_missing_secret_or_key_is_none() -> None:
    recorded = RecordedCluster([], [SECRET])
    control = ControlCluster(load_served([], "c"), None, recorded.client())
    assert control.secret_value("modelplane-system", "onprem-us-east-kubeconfig", "kubeconfig").startswith("apiVersion")
    assert control.secret_value("modelplane-system", "onprem-us-east-kubeconfig", "other") is None
    assert control.secret_value("modelplane-system", "absent", "kubeconfig") is None


# The status provider's rules.

def test_keys_name_kind_namespace_and_name() -> None:
    assert parse_key("ModelDeployment/ml-team/qwen3-8b") == ("ModelDeployment", "ml-team", "qwen3-8b")
    assert parse_key("InferenceGateway/default") == ("InferenceGateway", "", "default")


def test_transition_times_are_kept_while_a_condition_holds() -> None:
    current = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
                              {"type": "Scheduled", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
    new = {"ready": "1/2", "conditions": [{"type": "Scheduled", "status": "False"}, {"type": "Ready", "status": "True"}]}
    timed = with_times(new, current, "2026-01-01T00:00:00Z")
    assert [(c["type"], c["lastTransitionTime"]) for c in timed["conditions"]] == [
        ("Scheduled", "2026-01-01T00:00:00Z"), ("Ready", "2020-01-01T00:00:00Z")]
    assert without_times(timed) == new
    assert with_times({"address": "a"}, {}, "now") == {"address": "a"}


def test_a_recreated_object_is_left_for_the_next_run_and_refresh_reads_statuses_back(cluster: RecordedCluster) -> None:
    entry = {"uid": "another-uid", "status": {"replicas": 1}}
    provider = StatusProvider()
    provider.create({"kubeconfig": CONTROL_KUBECONFIG, "objects": {"ModelDeployment/ml-team/qwen3-8b": entry,
                                                                   "ModelDeployment/ml-team/gone": entry}})
    assert cluster.writes == [], "another uid: the object was created again since the program read it; gone: 404"
    qwen = cluster.find(*QWEN)
    assert qwen is not None
    read = provider.read("modelplane-status", {"kubeconfig": CONTROL_KUBECONFIG, "objects": {
        "ModelDeployment/ml-team/qwen3-8b": entry, "ModelDeployment/ml-team/gone": entry}})
    assert read.outs["objects"] == {"ModelDeployment/ml-team/qwen3-8b": {
        "uid": qwen["metadata"]["uid"], "status": qwen["status"]}}, "what the cluster shows, without a deleted object"
    diff = provider.diff("modelplane-status", read.outs, {"kubeconfig": CONTROL_KUBECONFIG, "objects": {}})
    assert diff.changes and not diff.replaces
