"""Observed capacity in control-cluster mode, on real API servers and the real Pulumi engine.

`hub` is the control cluster (the generated CRDs, the platform's and the ML team's objects, the
kubeconfig Secrets of the two workload clusters); `east` (one pool of 4 nodes) and `west` (one pool
of 2 nodes, `outageGracePeriodSeconds: 40`) are workload clusters whose GPU nodes are API objects:
Ready Nodes with the pool label and one ResourceSlice of 8 H100s each (tests/e2e/gpu_nodes.py), which
east's class declares as published (81559Mi) and west's as the card's name says (80Gi). The
fleet runs with `scheduler=True` only so that the controller manager runs without its node
lifecycle controller: no kubelet renews these nodes' leases, and that controller would mark them
NotReady on its own. Each replica needs a whole node (8 GPUs).

The tests are the scenario's steps, in order:
1. Four nodes NotReady-or-not: with 3 of east's 4 nodes NotReady, a scale to 4 places only 3
   (east 1, west 2): the pool took fewer new replicas (as declared, all 4 would fit). Once Ready
   again, the 4th lands on east. East's status says its devices match its class (DevicesMatchClasses
   True), west's that they differ, with the field and both values.
2. A flap: west's API server is stopped (unreachable) for one run, started for the next, stopped
   again for a third run more than the grace period after the first: nothing moves in any of them
   (the clock restarted when west was seen up).
3. West stays unreachable past its grace: its 2 replicas are re-placed on east in that run, and
   the old ones are stranded: kept in the placement's state, their objects on west registered
   unchanged, so the run asks nothing of west and succeeds (a delete there would fail every run).
   The status on the control cluster says why they moved and that west is Expired.
4. West answers again: its old replicas are still there (nothing was lost), the next run deletes
   them (make-before-break: their replacements were applied runs before), and nothing moves back.
Assertions read the API servers and the engine's JSON (events, `pulumi stack export`).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from modelplane.local.project import Project, events
from modelplane.local.servers import Cluster, Fleet, apply_crds
from tests.e2e.conftest import CRDS, ROOT, binaries, kubectl
from tests.e2e.gateways import gateway_addresses
from tests.e2e.gpu_nodes import Api, add_nodes
from tests.e2e.reads import objects
from tests.nvidia import card_for

MODELPLANE = str(ROOT / ".venv" / "bin" / "modelplane")
NS = "ml-team"
GRACE = 40
NODES = {"east": [f"east-gpu-{i}" for i in range(4)], "west": [f"west-gpu-{i}" for i in range(2)]}
CLASS = """apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {{name: {name}}}
spec:
  devices:
  - {{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8, capacity: {{memory: {{value: {memory}}}}}}}
---
"""
CLASSES = {"east": "h100-8x", "west": "h100-8x-from-the-name"}
"""West's class declares the 80Gi of the card's name; its nodes publish the 81559Mi NVML measures."""
CLUSTER = """---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {{name: {name}}}
spec:
  outageGracePeriodSeconds: {grace}
  cluster:
    source: Existing
    existing: {{secretRef: {{name: {name}-kubeconfig}}, storageClassName: shared-rwx}}
  nodePools:
  - {{name: h100, className: {klass}, nodeCount: {nodes}}}
  gateway: {{publicInference: true}}
"""
GATEWAY = """---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceGateway
metadata: {name: default}
spec: {cluster: east, plainHTTP: true}
"""


@dataclass
class Scenario:
    project: Project
    fleet: Fleet
    tools: Path
    log: dict[str, Any] = field(default_factory=dict)

    @property
    def hub(self) -> Cluster:
        return self.fleet.clusters["hub"]

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return kubectl(self.tools, self.hub, *args, stdin=stdin).stdout

    def up(self, reachable: tuple[str, ...] = ("east", "west")) -> list[dict[str, Any]]:
        """`pulumi up`, with the Gateway controller's stand-in on the clusters that answer."""
        with gateway_addresses({name: self.fleet.clusters[name] for name in reachable}):
            done = self.project.run("up", "--yes", "--skip-preview", "--json", check=False)
        found = events(done.stdout)
        errors = [e["diagnosticEvent"]["message"] for e in found
                  if e.get("diagnosticEvent", {}).get("severity") == "error"]
        assert done.returncode == 0, f"pulumi up failed: {errors}\n{done.stderr[-3000:]}"
        return found

    def placement_outputs(self) -> dict[str, Any]:
        resources = json.loads(self.project.export())["deployment"]["resources"]
        return next(r for r in resources if r["urn"].endswith("::modelplane-placement"))["outputs"]

    def capacity(self) -> dict[str, Any]:
        return self.placement_outputs()["capacity"]

    def stranded(self) -> list[tuple[str, str, int]]:
        return [(r["deployment"], r["cluster"], r["index"]) for r in self.placement_outputs()["stranded"]["replicas"]]

    def replicas(self) -> dict[str, list[str]]:
        return {name: sorted(objects(self.fleet.clusters[name], "Deployment")) for name in ("east", "west")}

    def status(self) -> dict[str, Any]:
        return json.loads(self.kubectl("-n", NS, "get", "md", "chat", "-o", "json"))["status"]

    def cluster_status(self, name: str) -> dict[str, Any]:
        return json.loads(self.kubectl("get", "inferencecluster", name, "-o", "json"))["status"]

    def set_ready(self, cluster: str, nodes: list[str], ready: bool) -> None:
        api = Api.of(self.fleet.clusters[cluster])
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for node in nodes:
            condition = {"type": "Ready", "status": "True" if ready else "False",
                         "reason": "KubeletReady" if ready else "KubeletNotReady", "message": "written by the test",
                         "lastHeartbeatTime": now, "lastTransitionTime": now}
            api.call("PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [condition]}},
                     "application/merge-patch+json")


def pool(capacity: dict[str, Any], cluster: str) -> dict[str, Any]:
    return next(p for p in capacity["pools"] if p["cluster"] == cluster)


def health(capacity: dict[str, Any], cluster: str) -> dict[str, Any]:
    return next(c for c in capacity["clusters"] if c["cluster"] == cluster)


@pytest.fixture(scope="module")
def fleet(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    running = Fleet(binaries(tools), tmp_path_factory.mktemp("servers"), ("hub", "east", "west"),
                    scheduler=True).start()
    try:
        for cluster in running.clusters.values():
            apply_crds(cluster, sorted(CRDS.glob("*.yaml")))
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def scenario(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    card = card_for(None, None, 81559)
    for name, nodes in NODES.items():
        add_nodes(Api.of(fleet.clusters[name]), nodes, "h100", card, 8)
    hub = fleet.clusters["hub"]
    crds = subprocess.run([MODELPLANE, "crds"], capture_output=True, text=True, timeout=120, check=True).stdout
    kubectl(tools, hub, "apply", "--server-side", "-f", "-", stdin=crds)
    kubectl(tools, hub, "wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=modelplane",
            "--timeout=60s")
    for namespace in (NS, "modelplane-system"):
        kubectl(tools, hub, "create", "namespace", namespace)
    for name in ("east", "west"):
        kubectl(tools, hub, "-n", "modelplane-system", "create", "secret", "generic", f"{name}-kubeconfig",
                f"--from-file=kubeconfig={fleet.clusters[name].kubeconfig_file}")
    platform = (CLASS.format(name=CLASSES["east"], memory="81559Mi") + CLASS.format(name=CLASSES["west"], memory="80Gi")
                + CLUSTER.format(name="east", grace=600, nodes=4, klass=CLASSES["east"])
                + CLUSTER.format(name="west", grace=GRACE, nodes=2, klass=CLASSES["west"]) + GATEWAY)
    models = (ROOT / "tests" / "e2e" / "control_cluster" / "models.yaml").read_text()
    kubectl(tools, hub, "apply", "-f", "-", stdin=platform + "---\n" + models)
    project = Project.create(tmp_path_factory.mktemp("observed-stack"), tools)
    project.read_from(hub)
    project.config("modelplane:kubeconfigSecrets[0]", "east-kubeconfig", path=True)
    project.config("modelplane:kubeconfigSecrets[1]", "west-kubeconfig", path=True)
    project.brownfield()
    return Scenario(project, fleet, tools)


def test_1_a_pool_with_notready_nodes_takes_fewer_new_replicas(scenario: Scenario) -> None:
    scenario.up()
    first = scenario.capacity()
    assert {(p["cluster"], p["declared"], p["observed"], p["planned"]) for p in first["pools"]} == {
        ("east", 4, 4, 4), ("west", 2, 2, 2)}
    assert {c["cluster"]: c["health"] for c in first["clusters"]} == {"east": "Up", "west": "Up"}

    scenario.set_ready("east", NODES["east"][1:], ready=False)
    scenario.kubectl("-n", NS, "scale", "md/chat", "--replicas", "4")
    scenario.up()
    assert pool(scenario.capacity(), "east") == {"cluster": "east", "pool": "h100", "declared": 4, "observed": 1,
                                                      "planned": 1}
    placed = scenario.replicas()
    assert (len(placed["east"]), len(placed["west"])) == (1, 2), placed
    status = scenario.status()
    assert (status["replicas"], status["desiredReplicas"]) == (3, 4), status
    east = scenario.cluster_status("east")
    assert {k: v for k, v in east.items() if k != "conditions"} == {"health": "Up", "pools": [
        {"name": "h100", "declared": 4, "observed": 1, "planned": 1}]}, "kubectl shows declared and observed"
    [matches] = east["conditions"]
    assert (matches["type"], matches["status"], matches["reason"]) == ("DevicesMatchClasses", "True",
                                                                       "PublishedDevicesMatch"), matches
    [differs] = scenario.cluster_status("west")["conditions"]
    assert (differs["type"], differs["status"], differs["reason"]) == ("DevicesMatchClasses", "False",
                                                                       "PublishedDevicesDiffer"), differs
    assert differs["message"].startswith(
        "InferenceClass h100-8x-from-the-name spec.devices[0].capacity.memory: declared 80Gi; the devices of pool "
        "h100 of cluster west (west-gpu-0, west-gpu-1) publish 81559Mi, so the class says more than the devices "
        "have"), differs
    table = [line.split() for line in scenario.kubectl("get", "ic").splitlines()]
    assert table[0][:3] == ["NAME", "SOURCE", "HEALTH"] and [row[2] for row in table[1:]] == ["Up", "Up"], table

    scenario.set_ready("east", NODES["east"][1:], ready=True)
    scenario.up()
    placed = scenario.replicas()
    assert (len(placed["east"]), len(placed["west"])) == (2, 2), placed
    assert pool(scenario.capacity(), "east")["observed"] == 4


def test_2_a_cluster_that_flaps_within_its_grace_moves_nothing(scenario: Scenario) -> None:
    before = scenario.replicas()
    west = scenario.fleet.clusters["west"]
    scenario.fleet.stop_apiserver("west")
    first_down = time.time()
    scenario.up(reachable=("east",))
    seen = health(scenario.capacity(), "west")
    assert seen["health"] == "Down" and "within its grace period of 40s" in seen["why"], seen
    assert sorted(objects(scenario.fleet.clusters["east"], "Deployment")) == before["east"]

    scenario.fleet.start_apiserver("west")
    assert west.ready()
    scenario.up()
    assert health(scenario.capacity(), "west")["health"] == "Up"
    assert scenario.replicas() == before

    scenario.fleet.stop_apiserver("west")
    time.sleep(max(0.0, first_down + GRACE + 2 - time.time()))
    scenario.up(reachable=("east",))
    seen = health(scenario.capacity(), "west")
    assert seen["health"] == "Down", f"the clock restarted when west was seen up: {seen}"
    assert sorted(objects(scenario.fleet.clusters["east"], "Deployment")) == before["east"]
    scenario.log["down since"] = seen["downSince"]
    scenario.log["before"] = before


def test_3_a_cluster_unreachable_past_its_grace_has_its_replicas_re_placed(scenario: Scenario) -> None:
    before = scenario.log["before"]
    time.sleep(max(0.0, scenario.log["down since"] + GRACE + 2 - time.time()))
    events = scenario.up(reachable=("east",))
    capacity = scenario.capacity()
    seen = health(capacity, "west")
    assert seen["health"] == "Expired", seen
    moved = capacity["moves"]
    assert sorted((m["from"], m["to"]) for m in moved) == [("west", "east"), ("west", "east")], moved
    assert all("past its grace period of 40s" in m["why"] for m in moved)
    east = sorted(objects(scenario.fleet.clusters["east"], "Deployment"))
    assert len(east) == 4 and set(before["east"]) < set(east), east
    scenario.log["events"] = events
    order = [(e["resOutputsEvent"]["metadata"]["op"], e["resOutputsEvent"]["metadata"]["urn"].rsplit("::", 1)[-1])
             for e in events if "resOutputsEvent" in e]
    created = [name for op, name in order if op == "create" and ":Deployment:" in name]
    assert sorted(created) == [f"modelplane:east:Deployment:{NS}/{name}" for name in sorted(set(east) - set(before["east"]))]
    assert ("update", "modelplane-status") in order, "the status is written in the same run"
    status = scenario.status()
    assert status["clusters"] == "east"
    assert sorted((m["source"], m["target"]) for m in status["moves"]) == [("west", "east"), ("west", "east")]
    assert all("past its grace period of 40s" in m["reason"] for m in status["moves"]), status["moves"]
    west = scenario.cluster_status("west")
    assert west["health"] == "Expired" and west["reason"].startswith("unreachable"), west
    [unread] = west["conditions"]
    assert (unread["status"], unread["reason"]) == ("Unknown", "NotChecked"), unread
    assert unread["message"].startswith("not checked this run: the cluster could not be read"), unread
    # The old replicas are stranded: kept in the state, their objects on west registered unchanged, so
    # the run asks nothing of west (a delete there would fail it) and succeeds.
    assert [(op, name) for op, name in order if name.startswith("modelplane:west:") and op != "same"] == []
    assert scenario.stranded() == [("ml-team/chat", "west", 0), ("ml-team/chat", "west", 1)]
    again = scenario.up(reachable=("east",))
    assert {e["resOutputsEvent"]["metadata"]["op"] for e in again if "resOutputsEvent" in e
            and ":Deployment:" in e["resOutputsEvent"]["metadata"]["urn"]} == {"same"}, "a run while west is away"
    assert scenario.stranded() == [("ml-team/chat", "west", 0), ("ml-team/chat", "west", 1)]


def test_4_when_the_cluster_answers_again_its_old_replicas_go_and_nothing_moves_back(scenario: Scenario) -> None:
    east = sorted(objects(scenario.fleet.clusters["east"], "Deployment"))
    scenario.fleet.start_apiserver("west")
    kept = objects(scenario.fleet.clusters["west"], "Deployment")
    assert sorted(kept) == ["chat-west-0-chat", "chat-west-1-chat"], "nothing was lost while west was away"
    assert not any(d["metadata"].get("deletionTimestamp") for d in kept.values())
    events = scenario.up()
    capacity = scenario.capacity()
    assert health(capacity, "west")["health"] == "Up" and capacity["moves"] == []
    west = scenario.cluster_status("west")
    assert "moves" not in scenario.status() and west["health"] == "Up"
    assert west["conditions"][0]["reason"] == "PublishedDevicesDiffer", "checked again once it answers"
    assert scenario.stranded() == []
    deleted = sorted(e["resOutputsEvent"]["metadata"]["urn"].rsplit("::", 1)[-1] for e in events
                     if "resOutputsEvent" in e and e["resOutputsEvent"]["metadata"]["op"] == "delete")
    assert f"modelplane:west:Deployment:{NS}/chat-west-0-chat" in deleted, deleted
    # Deleted (foreground): their pods are bound to nodes with no kubelet, so they never finish terminating here.
    left = objects(scenario.fleet.clusters["west"], "Deployment")
    assert left and all(d["metadata"].get("deletionTimestamp") for d in left.values()), left
    assert sorted(objects(scenario.fleet.clusters["east"], "Deployment")) == east, "nothing moves back"
