"""Faults on the real engine (issue 22): what an unattended control-cluster stack does when something goes wrong.

The fleet of tests/e2e/test_control_plane.py: `east` is the control cluster (the generated CRDs and the
objects of tests/e2e/control_cluster, applied with kubectl), `west` the only workload cluster, reached
through its kubeconfig Secret on `east`. The stack reads the objects from `east`, deploys to `west`
and writes the status back to `east`. The tests are the scenario's steps, in order:

- (a) a refused edit: a ModelDeployment naming a ModelCache that does not exist (scaled at the same
  time), an InferenceCluster pool naming a class that does not exist (with a new node count), and an
  InferenceClass attribute name the CRD cannot refuse (a map key) while the loader does, then `up`:
  nothing on `west` is created, changed or deleted, the engine's steps touch nothing but the status
  writer, the statuses (each refused object's Ready condition, and the gateway's, held by the cluster) and
  the `refused` output carry the errors; fixing the edits converges. The
  class edit of issue 22 (`capacity: 80GB`) is refused by the API server itself now.
- (c) `west`'s API server stopped while a scale waits: `up` fails naming west's address, deletes
  nothing and moves no replica; with west back, `up` converges.
- (b) `pulumi up` SIGKILLed (the whole process group) once the engine starts creating a Deployment
  on `west`; the documented recovery (`pulumi cancel`, `pulumi refresh --clear-pending-creates`, `up`)
  converges with no pending operation, no duplicate and no object on `west` the state does not hold.

Assertions read the API servers (kubectl, the official client) and the engine's JSON, never our logs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelplane.local.project import Project, events
from modelplane.local.servers import Fleet
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import objects, versions
from tests.e2e.test_control_plane import MANIFESTS, NS, STATUS_TYPE, Control, modelplane

PLACEMENT_TYPE = "pulumi-python:dynamic/modelplane:Placement"
DELETES = ("delete", "delete-replaced", "replace", "discard", "create-replacement")
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
    assert capacity.returncode != 0 and "spec.devices[0].capacity.memory.value" in capacity.stderr, capacity.stderr
    control.kubectl("patch", "inferenceclass", "h100-8x", "--type=json", "-p", json.dumps([
        {"op": "add", "path": "/spec/devices/0/attributes", "value": {"compute capability": {"string": "9.0"}}}]))

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
    assert refused["InferenceClass h100-8x"]["plannedWith"] == "its last accepted version"
    assert refused["InferenceClass h100-8x"]["problems"][0].startswith("spec.devices[0].attributes")
    chat = control.get("md", "chat")
    ready = condition(chat, "Ready")
    assert (chat["status"]["ready"], ready["status"], ready["reason"]) == ("2/2", "False", "InvalidSpec")
    assert ready["message"].startswith("spec.modelCacheRef.name: ModelCache 'missing' is not defined")
    assert chat["status"]["observedGeneration"] == chat["metadata"]["generation"]
    readiness = {kind: condition(control.get(kind, name, namespace=None), "Ready") for kind, name in (
        ("inferenceclass", "h100-8x"), ("inferencecluster", "west"), ("inferencegateway", "default"))}
    assert {kind: (c["status"], c["reason"]) for kind, c in readiness.items()} == {
        "inferenceclass": ("False", "InvalidSpec"), "inferencecluster": ("False", "InvalidSpec"),
        "inferencegateway": ("False", "DependencyRefused")}
    assert readiness["inferenceclass"]["message"].startswith("spec.devices[0].attributes")
    assert readiness["inferencegateway"]["message"].startswith("InferenceCluster west is refused")


def test_3_fixing_the_edits_converges(control: Control) -> None:
    before = versions(control.west)
    control.kubectl("-n", NS, "patch", "md", "chat", "--type=json", "-p",
                    json.dumps([{"op": "remove", "path": "/spec/modelCacheRef"}]))
    control.kubectl("patch", "inferencecluster", "west", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/nodePools/0/className", "value": "h100-8x"}]))
    control.kubectl("patch", "inferenceclass", "h100-8x", "--type=json", "-p",
                    json.dumps([{"op": "remove", "path": "/spec/devices/0/attributes"}]))
    control.kubectl("apply", "-f", str(MANIFESTS / "platform.yaml"))
    control.up("fixed")
    after = versions(control.west)
    assert {k: v for k, v in after.items() if k in before} == before, "the replicas that ran stay untouched"
    assert set(after) - set(before) == {"Deployment/chat-west-2-chat"}, "the scale waited, then applied"
    assert control.project.outputs()["refused"] == {}
    chat = control.get("md", "chat")
    assert (chat["status"]["ready"], condition(chat, "Ready")["status"]) == ("3/3", "True")
    h100 = condition(control.get("inferenceclass", "h100-8x", namespace=None), "Ready")
    assert (h100["status"], h100["reason"]) == ("True", "SpecApplied")
    for kind, name in (("inferencecluster", "west"), ("inferencegateway", "default")):
        status = control.get(kind, name, namespace=None)["status"]
        assert "Ready" not in [c["type"] for c in status.get("conditions", ())], "accepted: no refusal to report"
    control.project.run("preview", "--expect-no-changes")


def deployment(control: Control) -> dict[str, Any]:
    return json.loads(control.project.export())["deployment"]


def placed(control: Control) -> list[tuple[str, int]]:
    """The chat replicas the stack's Placement holds, (cluster, index)."""
    placement = next(r for r in deployment(control)["resources"] if r["type"] == PLACEMENT_TYPE)
    return [(r["cluster"], r["index"]) for r in json.loads(placement["outputs"]["placement"])["replicas"]]


def held_deployments(control: Control) -> list[str]:
    """The names of the Deployments on west the stack's state holds."""
    return sorted(r["outputs"]["metadata"]["name"] for r in deployment(control)["resources"]
                  if r["type"] == "kubernetes:apps/v1:Deployment")


def test_4_an_outage_deletes_nothing_and_moves_no_replica(control: Control) -> None:
    before = versions(control.west, ("Deployment", "Service", "HTTPRoute"))
    replicas = placed(control)
    control.kubectl("-n", NS, "scale", "md/chat", "--replicas", "4")
    control.fleet.stop_apiserver("west")
    try:
        done = control.project.run("up", "--yes", "--skip-preview", "--json", check=False)
    finally:
        control.fleet.start_apiserver("west")
    assert done.returncode != 0, "a step on a cluster that does not answer fails the run"
    emitted = events(done.stdout)
    ops = [(event.get("resourcePreEvent") or {}).get("metadata", {}).get("op") for event in emitted]
    assert not set(ops) & set(DELETES), ops
    errors = [(e["diagnosticEvent"].get("urn", ""), e["diagnosticEvent"]["message"]) for e in emitted
              if (e.get("diagnosticEvent") or {}).get("severity") == "error"]
    assert any("modelplane:west" in urn and f"127.0.0.1:{control.west.port}" in message and "unreachable" in message
               for urn, message in errors), errors
    assert versions(control.west, ("Deployment", "Service", "HTTPRoute")) == before, "nothing on west changed"
    assert placed(control)[:len(replicas)] == replicas, "the replicas that ran stay where they are"

    control.up("west back")
    assert set(objects(control.west, "Deployment")) == {f"chat-west-{i}-chat" for i in range(4)}
    assert {k: v for k, v in versions(control.west).items() if k in before} == {
        k: v for k, v in before.items() if k.startswith("Deployment/")}
    control.project.run("preview", "--expect-no-changes")


def creating(log: Path, kind: str) -> bool:
    """Whether the engine's event log shows a create of `kind` under way."""
    if not log.exists():
        return False
    for line in log.read_text().splitlines():
        try:
            metadata = (json.loads(line).get("resourcePreEvent") or {}).get("metadata") or {}
        except ValueError:  # the line being written
            continue
        if metadata.get("op") == "create" and metadata.get("type") == kind:
            return True
    return False


def settle_torn_checkpoint(project: Project) -> bool:
    """The file backend's recovery step for a kill during a checkpoint write (docs/always-on.md): the
    checkpoint is written to a temporary file and renamed, so it is whole, but its metadata file
    (`<stack>.json.attrs`) may be left empty, and every command then fails with `failed to load
    checkpoint: EOF`. Removing the empty file (and the temporary one) settles it. Whether it happened."""
    export = project.run("stack", "export", check=False)
    if export.returncode == 0:
        return False
    assert "failed to load checkpoint: EOF" in export.stderr, export.stderr
    stacks = next((project.directory / "state" / ".pulumi" / "stacks").iterdir())
    attrs = stacks / f"{project.stack}.json.attrs"
    assert attrs.stat().st_size == 0, "only an empty metadata file is removed"
    attrs.unlink()
    for partial in stacks.glob(f"{project.stack}.json.*.tmp"):
        partial.unlink()
    return True


def end_orphans(directory: Path) -> None:
    """SIGKILL what the killed CLI started and left running, and wait until it is gone: the engine starts
    its plugins in process groups of their own, so they outlive the kill of the CLI's group, where a
    dead machine would have taken them too. Found by the stack's directory in their command line (the
    dynamic provider) or as their working directory (the language host and the Kubernetes provider,
    whose command lines hold only the engine's address: matched by the command line alone, the
    Kubernetes provider was left running after `make e2e`, and both after a run of this file alone)."""
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if str(directory) in command or Path(os.readlink(proc / "cwd")).is_relative_to(directory):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(proc)
        except (OSError, ValueError):  # gone meanwhile, or not ours to read
            continue
    deadline = time.monotonic() + 30
    while any(_alive(proc) for proc in killed):
        assert time.monotonic() < deadline, f"still running 30 s after SIGKILL: {[p.name for p in killed if _alive(p)]}"
        time.sleep(0.05)


def _alive(proc: Path) -> bool:
    """Whether the process is still there and not a zombie waiting for its parent to reap it."""
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_5_an_up_killed_mid_create_recovers_with_no_duplicate_and_no_orphan(control: Control) -> None:
    control.kubectl("patch", "inferencecluster", "west", "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/nodePools/0/nodeCount", "value": 6}]))  # room for a fifth replica
    control.kubectl("-n", NS, "scale", "md/chat", "--replicas", "5")
    log = control.project.directory / "killed-up-events.jsonl"
    with log.open("w") as out:  # `up --json` streams the engine's events, one per line
        process = subprocess.Popen([control.project.pulumi, "up", "--yes", "--skip-preview", "--non-interactive",
                                    "--json"], cwd=control.project.directory, env=control.project.env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not creating(log, "kubernetes:apps/v1:Deployment"):
            assert process.poll() is None, f"the update ended before creating a Deployment: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "no create within 300 s"
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        end_orphans(control.project.directory)
    torn = settle_torn_checkpoint(control.project)
    pending = [op["resource"]["urn"].rsplit("::", 1)[-1] for op in deployment(control).get("pending_operations") or ()]
    print(f"\nkilled mid-create: torn checkpoint metadata {torn}; pending {pending}; "
          f"on west {sorted(objects(control.west, 'Deployment'))}")
    locked = control.project.run("up", "--yes", "--skip-preview", check=False)
    assert locked.returncode != 0 and "the stack is currently locked" in locked.stderr + locked.stdout

    control.project.run("cancel", "--yes")
    control.project.run("refresh", "--yes", "--clear-pending-creates")
    control.up("after the kill")
    state = deployment(control)
    assert not state.get("pending_operations"), state.get("pending_operations")
    on_west = sorted(objects(control.west, "Deployment"))
    assert on_west == held_deployments(control) == [f"chat-west-{i}-chat" for i in range(5)], \
        "no duplicate, and nothing on west the state does not hold"
    control.project.run("preview", "--expect-no-changes")
