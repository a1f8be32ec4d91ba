"""Faults on the real engine (issue 22): what an unattended control-cluster stack does when something goes wrong.

The fleet of tests/e2e/test_control_plane.py: `east` is the control cluster (the generated CRDs and the
objects of tests/e2e/control_cluster, applied with kubectl), `west` the only workload cluster, reached
through its kubeconfig Secret on `east`. The stack reads the objects from `east`, deploys to `west`
and writes the status back to `east`. The tests are the scenario's steps, in order:

- (a) a refused edit: a ModelDeployment naming a ModelCache that does not exist (scaled at the same
  time), an InferenceCluster pool naming a class that does not exist (with a new node count), and an
  InferenceClass capacity the CRD admits and the loader refuses (`80GB`), then `up`: nothing on
  `west` is created, changed or deleted, the engine's steps touch nothing but the status writer,
  the statuses and the `refused` output carry the errors; fixing the edits converges.

Assertions read the API servers (kubectl, the official client) and the engine's JSON, never our logs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelplane.local.project import Project
from modelplane.local.servers import Fleet
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import objects, versions
from tests.e2e.test_control_plane import MANIFESTS, NS, STATUS_TYPE, Control, modelplane

OWNED_OPS = ("create", "update", "replace", "create-replacement", "delete-replaced", "delete", "discard")


@pytest.fixture(scope="module")
def control(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    project = Project.create(tmp_path_factory.mktemp("faults-stack"), tools)
    project.read_from(fleet.clusters["east"])
    project.config("modelplane:kubeconfigSecrets[0]", "west-kubeconfig", path=True)
    project.brownfield()
    with gateway_addresses(fleet.clusters):
        yield Control(project, fleet, tools, {})


def changed_steps(preview: dict[str, Any]) -> list[tuple[str, str]]:
    """(op, type) of every step of a preview that would change a resource, the status writer aside."""
    return [(step["op"], step["urn"].split("::")[2]) for step in preview.get("steps", [])
            if step["op"] in OWNED_OPS and not step["urn"].split("::")[2].endswith(STATUS_TYPE)]


def changed_events(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(op, type) of every resource an `up` changed (its resOutputsEvents), the status writer aside."""
    found = []
    for event in events:
        metadata = (event.get("resOutputsEvent") or {}).get("metadata")
        if metadata and metadata["op"] in OWNED_OPS and not metadata["type"].endswith(STATUS_TYPE):
            found.append((metadata["op"], metadata["type"]))
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def test_1_the_fleet_is_up(control: Control) -> None:
    control.kubectl("apply", "--server-side", "-f", "-", stdin=modelplane("crds").stdout)
    control.kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=modelplane",
                    "--timeout=60s")
    for namespace in (NS, "modelplane-system"):
        control.kubectl("create", "namespace", namespace)
    control.kubectl("-n", "modelplane-system", "create", "secret", "generic", "west-kubeconfig",
                    f"--from-file=kubeconfig={control.west.kubeconfig_file}")
    control.kubectl("apply", "-f", str(MANIFESTS / "platform.yaml"), "-f", str(MANIFESTS / "models.yaml"))
    control.kubectl("-n", NS, "scale", "md/chat", "--replicas", "2")
    control.up("first up")
    assert set(objects(control.west, "Deployment")) == {"chat-west-0-chat", "chat-west-1-chat"}
    assert control.project.outputs()["refused"] == {}


def test_2_a_refused_edit_deletes_nothing_and_says_why(control: Control) -> None:
    before = versions(control.west, ("Deployment", "Service", "HTTPRoute"))
    placement = control.project.outputs()["placement"]
    control.kubectl("-n", NS, "patch", "md", "chat", "--type=merge", "-p",
                    json.dumps({"spec": {"replicas": 3, "modelCacheRef": {"name": "missing"}}}))
    control.kubectl("patch", "inferencecluster", "west", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/nodePools/0/className", "value": "h100-8x-typo"},
        {"op": "replace", "path": "/spec/nodePools/0/nodeCount", "value": 5}]))
    capacity = control.kubectl("patch", "inferenceclass", "h100-8x", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/devices/0/capacity/memory/value", "value": "80GB"}]), check=False)

    preview, _ = control.project.preview()
    assert changed_steps(preview) == [], "the preview plans no change to anything the stack owns"
    events = control.up("a refused edit")
    assert changed_events(events) == [], "the update changes nothing the stack owns"
    assert versions(control.west, ("Deployment", "Service", "HTTPRoute")) == before, "nothing on west moved"

    outputs = control.project.outputs()
    assert outputs["placement"] == placement
    refused = outputs["refused"]
    assert refused["ModelDeployment ml-team/chat"]["plannedWith"] == "its last accepted version"
    assert refused["ModelDeployment ml-team/chat"]["problems"][0].startswith(
        "spec.modelCacheRef.name: ModelCache 'missing' is not defined")
    assert refused["InferenceCluster west"]["held"] == ["InferenceGateway default"]
    assert refused["InferenceCluster west"]["problems"][0].startswith(
        "spec.nodePools[0].className: InferenceClass 'h100-8x-typo' is not defined")
    if capacity.returncode == 0:  # the CRD admits it: the loader refuses it, and the run holds it too
        assert refused["InferenceClass h100-8x"]["problems"][0].startswith("spec.devices[0].capacity")
    chat = control.get("md", "chat")
    ready = condition(chat, "Ready")
    assert (chat["status"]["ready"], ready["status"], ready["reason"]) == ("2/2", "False", "InvalidSpec")
    assert ready["message"].startswith("spec.modelCacheRef.name: ModelCache 'missing' is not defined")
    assert chat["status"]["observedGeneration"] == chat["metadata"]["generation"]


def test_3_fixing_the_edits_converges(control: Control) -> None:
    before = versions(control.west)
    control.kubectl("-n", NS, "patch", "md", "chat", "--type=json", "-p",
                    json.dumps([{"op": "remove", "path": "/spec/modelCacheRef"}]))
    control.kubectl("patch", "inferencecluster", "west", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/nodePools/0/className", "value": "h100-8x"}]))
    control.kubectl("apply", "-f", str(MANIFESTS / "platform.yaml"))
    control.up("fixed")
    after = versions(control.west)
    assert {k: v for k, v in after.items() if k in before} == before, "the replicas that ran stay untouched"
    assert set(after) - set(before) == {"Deployment/chat-west-2-chat"}, "the scale waited, then applied"
    assert control.project.outputs()["refused"] == {}
    chat = control.get("md", "chat")
    assert (chat["status"]["ready"], condition(chat, "Ready")["status"]) == ("3/3", "True")
    control.project.run("preview", "--expect-no-changes")
