"""The oracle: every example fleet (and the oracle's own fleet, tests/e2e/scheduling) placed by
modelplane, then scheduled by the real kube-scheduler 1.34.4 and its DRA allocator.

For each manifest set: `modelplane plan --format json --render DIR` (the CLI, as a user runs it:
the same objects `pulumi up` creates, tests/e2e/test_pulumi_engine.py), then a fleet of real API
servers named after the set's clusters (servers.py, each with a controller manager and a
scheduler). Each pool gets as many Ready nodes as the planner may fill (`maxNodeCount`, else
`nodeCount`: what the autoscaler would reach) with the pool's label and the GPU taint, each with
one ResourceSlice as the NVIDIA driver publishes the class's card (gpu_nodes.py, tests/nvidia.py).
The rendered Namespaces, ResourceClaimTemplates, Deployments and PersistentVolumeClaims (each with
a pre-bound PersistentVolume and its StorageClass standing in for the RWX storage) are created; the controller manager
makes the ReplicaSets, pods and claims. LeaderWorkerSet pods are created by the test from the
LeaderWorkerSet's templates (leader `<name>-<i>`, workers `<name>-<i>-<w>`), as its controller
would: that controller is not built (README, docs/real-scheduler.md). Not applied: the serving
objects (Services, routes, the endpoint picker's Deployment) and the ModelCache download Jobs, which
claim no GPU (and these clusters have no CPU nodes).

Asserted from the API servers: every pod is bound (PodScheduled) to a node of the pool the
placement chose for its replica, engine and role; each of its claims is allocated, on that node,
exactly the devices its requests count, each satisfying the request's selectors (checked again
with our evaluator against the published device); nothing stays Pending. On the oracle's fleet, a
replica of a deployment modelplane left short because its pool has no devices left, created by
hand, stays Pending with the scheduler's reason. Figures go to `oracle-figures.json` in the run's
directory.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import Manifests, load
from modelplane.cel import Device, SelectorEvaluator
from modelplane.cli import main
from tests.e2e.conftest import ROOT
from tests.e2e.gpu_nodes import Api, add_nodes, allocation, card_of, gpu_count, namespace, scheduled, settle
from modelplane.local.servers import Fleet
from tests.e2e.conftest import binaries
from tests.nvidia import DRIVER, gpu_device

EXAMPLES = ROOT / "examples"
NOT_NVIDIA = ("amd-mi300x",)
"""Example fleets whose classes are not NVIDIA GPUs: the fake nodes publish devices as the NVIDIA DRA
driver does (`gpu_nodes`, `tests/nvidia.py`); AMD's driver facts are not among the fixtures yet."""
SETS = {
    **{path.name: [path] for path in sorted(EXAMPLES.iterdir())
       if path.is_dir() and path.name not in ("ci", "getting-started", *NOT_NVIDIA) and any(path.glob("*.yaml"))},
    "getting-started": sorted(p for p in (EXAMPLES / "getting-started").iterdir() if p.is_dir()),
    "oracle-fleet": [ROOT / "tests" / "e2e" / "scheduling"],
}
APPLIED = {"Namespace": "", "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
           "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
           "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims"}
SHORT_BY_DEVICES = "ml-team/ada-only"


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    found: dict[str, Any] = {}
    yield found
    path = tmp_path_factory.getbasetemp() / "oracle-figures.json"
    path.write_text(json.dumps(found, indent=1, sort_keys=True))
    print(f"\noracle figures: {path}\n{json.dumps(_totals(found), indent=1)}")


def _totals(found: dict[str, Any]) -> dict[str, int]:
    keys = ("clusters", "nodes", "pods bound", "claims allocated", "devices allocated")
    return {key: sum(one.get(key, 0) for one in found.values()) for key in keys}


def plan(paths: list[Path], directory: Path) -> tuple[Manifests, dict[str, Any], Path]:
    rendered, placement = directory / "rendered", directory / "placement.json"
    assert main(["plan", *map(str, paths), "--format", "json", "--out", str(placement), "--render",
                 str(rendered)]) == 0
    return load([str(p) for p in paths]), json.loads(placement.read_text()), rendered


def lws_pods(lws: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods the LeaderWorkerSet controller makes: per group a leader and size - 1 workers."""
    template = lws["spec"]["leaderWorkerTemplate"]
    pods = []
    for group in range(lws["spec"].get("replicas", 1)):
        for index in range(template.get("size", 1)):
            source = template["leaderTemplate"] if index == 0 and "leaderTemplate" in template else template[
                "workerTemplate"]
            name = f"{lws['metadata']['name']}-{group}" + (f"-{index}" if index else "")
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "labels": source["metadata"]["labels"]},
                         "spec": copy.deepcopy(source["spec"])})
    return pods


def apply(api: Api, folder: Path) -> int:
    """Create what schedules of one rendered cluster folder; the number of pods to expect."""
    expected = 0
    documents = [doc for path in sorted(folder.rglob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
    # What pods need exists before the pods: namespaces, then claim templates and volume claims.
    order = ("Namespace", "ResourceClaimTemplate", "PersistentVolumeClaim")
    for doc in sorted(documents, key=lambda d: order.index(d["kind"]) if d["kind"] in order else len(order)):
        kind, ns = doc["kind"], doc["metadata"].get("namespace", "")
        if kind == "Namespace":
            namespace(api, doc["metadata"]["name"])
        elif kind == "Deployment" and not doc["spec"]["template"]["spec"].get("resourceClaims"):
            continue  # claims no GPU (the prefill/decode endpoint picker): no CPU nodes here
        elif kind in APPLIED:
            if kind == "PersistentVolumeClaim":  # the class and the volume first: the binder then binds at once
                if doc["spec"].get("storageClassName"):
                    api.ensure("/apis/storage.k8s.io/v1/storageclasses", {
                        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                        "metadata": {"name": doc["spec"]["storageClassName"]},
                        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"})
                api.create("/api/v1/persistentvolumes", standin_volume(doc))
            api.create(APPLIED[kind].format(ns=ns), doc)
            if kind == "Deployment":
                expected += doc["spec"].get("replicas", 1)
        elif kind == "LeaderWorkerSet":
            for pod in lws_pods(doc):
                api.create(f"/api/v1/namespaces/{ns}/pods", pod)
                expected += 1
    return expected


def standin_volume(claim: dict[str, Any]) -> dict[str, Any]:
    """A PersistentVolume bound in advance to the claim (a TEST-NET NFS address: nothing mounts it)."""
    spec = claim["spec"]
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"{claim['metadata']['namespace']}-{claim['metadata']['name']}"},
            "spec": {"capacity": {"storage": spec["resources"]["requests"]["storage"]},
                     "accessModes": spec["accessModes"], "storageClassName": spec.get("storageClassName", ""),
                     "claimRef": {"namespace": claim["metadata"]["namespace"], "name": claim["metadata"]["name"]},
                     "nfs": {"server": "192.0.2.1", "path": "/models"}}}


def expected_member(placement: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    labels = pod["metadata"]["labels"]
    key = f"{pod['metadata']['namespace']}/{labels['modelplane.ai/deployment']}"
    replica = next(r for r in placement["replicas"] if r["deployment"] == key
                   and r["cluster"] == labels["modelplane.ai/cluster"]
                   and str(r["index"]) == labels["modelplane.ai/replica-index"])
    roles = replica["engines"][labels["modelplane.ai/engine"]]
    return next(member for role, member in roles.items() if role.lower() == labels["modelplane.ai/role"])


def check_pod(api: Api, pod: dict[str, Any], placement: dict[str, Any], nodes: dict[str, dict[str, Any]],
              evaluator: SelectorEvaluator) -> tuple[list[str], int, int]:
    """Problems with one pod, and the claims and devices allocated to it."""
    name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    if not pod["spec"].get("nodeName"):
        return [f"{name} is not bound: {(scheduled(pod) or {}).get('message')}"], 0, 0
    node = nodes[pod["spec"]["nodeName"]]
    member = expected_member(placement, pod)
    problems = []
    if node["pool"] != member["pool"]:
        problems.append(f"{name} is on {node['name']} of pool {node['pool']}, the placement chose {member['pool']}")
    results = allocation(api, pod)
    requests = {r["name"]: r for r in member["requests"]}
    for request in requests.values():
        got = [r for r in results if r["request"] == request["name"]]
        if len(got) != request["count"]:
            problems.append(f"{name}: request {request['name']} got {len(got)} devices, asked {request['count']}")
    for result in results:
        request = requests.get(result["request"])
        if result["driver"] != DRIVER or result["pool"] != node["name"] or request is None:
            problems.append(f"{name}: allocated {result} is not a device of its node {node['name']}")
            continue
        device = node["devices"][result["device"]]
        for selector in request["selectors"]:
            if not evaluator.evaluate(selector, device).matched:
                problems.append(f"{name}: {result['device']} on {node['name']} does not satisfy {selector}")
    claims = len((pod.get("status") or {}).get("resourceClaimStatuses") or [])
    return problems, claims, len(results)


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_real_scheduler_places_what_modelplane_planned(name: str, tools: Path, figures: dict[str, Any],
                                                           tmp_path: Path) -> None:
    manifests, placement, rendered = plan(SETS[name], tmp_path)
    clusters = tuple(c.name for c in manifests.fleet.clusters)
    fleet = Fleet(binaries(tools), tmp_path / "servers", clusters, scheduler=True)
    (tmp_path / "servers").mkdir()
    fleet.start()
    evaluator = SelectorEvaluator()
    problems: list[str] = []
    counts = {"clusters": len(clusters), "nodes": 0, "pods bound": 0, "claims allocated": 0, "devices allocated": 0}
    try:
        for cluster in manifests.fleet.clusters:
            api = Api.of(fleet.clusters[cluster.name])
            nodes: dict[str, dict[str, Any]] = {}
            for pool in cluster.spec.node_pools:
                inference_class = manifests.fleet.inference_class(pool.class_name)
                card, gpus = card_of(inference_class), gpu_count(inference_class)
                names = [f"{pool.name}-{i}" for i in range(pool.capacity)]
                add_nodes(api, names, pool.name, card, gpus)
                for node in names:
                    devices = {f"gpu-{m}": Device.from_class_device({**gpu_device(card, node, m), "driver": DRIVER})
                               for m in range(gpus)}
                    nodes[node] = {"name": node, "pool": pool.name, "devices": devices}
            counts["nodes"] += len(nodes)
            folder = rendered / cluster.name
            expected = apply(api, folder) if folder.is_dir() else 0
            pods = settle(api, "", expected, "app.kubernetes.io/managed-by=modelplane") if expected else []
            for pod in pods:
                found, claims, devices = check_pod(api, pod, placement, nodes, evaluator)
                problems += found
                counts["pods bound"] += not found and bool(pod["spec"].get("nodeName"))
                counts["claims allocated"] += claims
                counts["devices allocated"] += devices
        if name == "oracle-fleet":
            counts["short, created by hand"] = short_by_hand(fleet, placement, rendered)
    finally:
        fleet.stop()
    figures[name] = counts
    assert problems == []
    assert counts["pods bound"] > 0 or not placement["replicas"]


def short_by_hand(fleet: Fleet, placement: dict[str, Any], rendered: Path) -> str:
    """A replica of the deployment left short for want of devices, created by hand: it stays Pending,
    and the scheduler says why."""
    state = placement["deployments"][SHORT_BY_DEVICES]
    assert state["scheduled"] < state["desired"], state
    replica = next(r for r in placement["replicas"] if r["deployment"] == SHORT_BY_DEVICES)
    api = Api.of(fleet.clusters[replica["cluster"]])
    source = next(p for p in (rendered / replica["cluster"]).rglob("deployment-ada-only-*.yaml"))
    deployment = yaml.safe_load(source.read_text())
    deployment["metadata"]["name"] = "ada-only-by-hand"
    for labels in (deployment["spec"]["selector"]["matchLabels"], deployment["spec"]["template"]["metadata"]["labels"]):
        labels["modelplane.ai/replica-index"] = "by-hand"
    api.create("/apis/apps/v1/namespaces/ml-team/deployments", deployment)
    pods = settle(api, "ml-team", 1, "modelplane.ai/replica-index=by-hand")
    condition = scheduled(pods[0]) or {}
    assert not pods[0]["spec"].get("nodeName") and condition.get("reason") == "Unschedulable", pods[0]
    assert "cannot allocate all claims" in condition["message"], condition
    return condition["message"]
