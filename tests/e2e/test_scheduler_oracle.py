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
makes the ReplicaSets, pods and claims. The rendered LeaderWorkerSets are created too, and each
cluster's LeaderWorkerSet controller (v0.9.0, with its webhooks) makes their StatefulSets, whose pods
the controller manager creates (leader `<name>-<i>`, workers `<name>-<i>-<w>`). Not applied: the serving
objects (Services, routes, the endpoint picker's Deployment) and the ModelCache download Jobs, which
claim no GPU (and these clusters have no CPU nodes).

The oracle's own fleet, whose clusters are Existing ones, is also brought up by the program itself
(`pulumi up` on the real engine, as tests/e2e/test_pulumi_engine.py runs it): the placement the
stack's state holds is the CLI's, and what the program created binds the same way.

Asserted from the API servers: every pod is bound (PodScheduled) to a node of the pool the
placement chose for its replica, engine and role; each of its claims is allocated, on that node,
exactly the devices its requests count, each satisfying the request's selectors (checked again
with our evaluator against the published device); nothing stays Pending. On the oracle's fleet, a
replica of a deployment modelplane left short because its pool has no devices left, created by
hand, stays Pending with the scheduler's reason. Figures go to `oracle-figures.json` in the run's
directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import Manifests, load
from modelplane.cel import Device, SelectorEvaluator
from modelplane.cli import main
from modelplane.local.project import Project
from modelplane.local.servers import Fleet
from tests.e2e.conftest import ROOT, binaries, install_crds
from tests.e2e.gateways import gateway_addresses
from tests import amd
from tests.e2e.gpu_nodes import (Api, add_amd_nodes, add_nodes, allocation, card_of, gpu_count, gpu_driver, namespace,
                                 scheduled, settle)
from tests.nvidia import gpu_device

EXAMPLES = ROOT / "examples"
CRDS = ROOT / "tests" / "data" / "crds"
SETS = {
    **{path.name: [path] for path in sorted(EXAMPLES.iterdir())
       if path.is_dir() and path.name not in ("ci", "getting-started") and any(path.glob("*.yaml"))},
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
    keys = ("clusters", "nodes", "pods bound", "claims allocated", "devices allocated", "gang pods",
            "gang headless Services")
    return {key: sum(one.get(key, 0) for one in found.values()) for key in keys}


def plan(paths: list[Path], directory: Path) -> tuple[Manifests, dict[str, Any], Path]:
    rendered, placement = directory / "rendered", directory / "placement.json"
    assert main(["plan", *map(str, paths), "--format", "json", "--out", str(placement), "--render",
                 str(rendered)]) == 0
    return load([str(p) for p in paths]), json.loads(placement.read_text()), rendered


LWS_CRDS = [CRDS / "leaderworkerset.x-k8s.io_leaderworkersets-v0.9.0.yaml", CRDS / "disaggregatedset-placeholder.yaml"]
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets"


def lws_pod_count(lws: dict[str, Any]) -> int:
    """The pods a LeaderWorkerSet's controller makes: per group a leader and size - 1 workers."""
    return lws["spec"].get("replicas", 1) * lws["spec"]["leaderWorkerTemplate"].get("size", 1)


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
            api.create(LWS_PATH.format(ns=ns), doc)
            expected += lws_pod_count(doc)
    return expected


GANG_LABEL = "leaderworkerset.sigs.k8s.io/name"


def gang_pod_problems(pod: dict[str, Any]) -> list[str]:
    """A LeaderWorkerSet's pod was made by its controller: owned by a StatefulSet, and labelled by
    its pod webhook with the group and worker index (`<name>-<group>` leads, `<name>-<group>-<w>` works)."""
    name, labels = pod["metadata"]["name"], pod["metadata"]["labels"]
    owners = [o["kind"] for o in pod["metadata"].get("ownerReferences", [])]
    group, worker = labels.get("leaderworkerset.sigs.k8s.io/group-index"), labels.get(
        "leaderworkerset.sigs.k8s.io/worker-index")
    expected = f"{labels[GANG_LABEL]}-{group}" + (f"-{worker}" if worker not in (None, "0") else "")
    if owners != ["StatefulSet"] or worker is None or name != expected:
        return [f"{pod['metadata']['namespace']}/{name}: not made by the LeaderWorkerSet controller as expected "
                f"(owners {owners}, group {group}, worker {worker})"]
    return []


def gang_service_problems(api: Api) -> tuple[list[str], int]:
    """Each LeaderWorkerSet's headless Service, which its pods' subdomain (`LWS_LEADER_ADDRESS`) resolves
    through, is the controller's own: named as the LeaderWorkerSet, headless, owned by it, selecting
    the gang's pods. A Service of modelplane's under that name would have stopped the controller from
    making it (sigs.k8s.io/lws v0.9.0 `CreateHeadlessServiceIfNotExists`)."""
    problems = []
    sets = api.items("/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets")
    for lws in sets:
        namespace, name = lws["metadata"]["namespace"], lws["metadata"]["name"]
        service = api.call("GET", f"/api/v1/namespaces/{namespace}/services/{name}")
        owners = [(o["kind"], o["name"]) for o in service["metadata"].get("ownerReferences", [])]
        if (service["spec"].get("clusterIP") != "None" or owners != [("LeaderWorkerSet", name)]
                or service["spec"].get("selector") != {GANG_LABEL: name}):
            problems.append(f"{namespace}/{name}: the Service of that name is not the LeaderWorkerSet's headless "
                            f"one (clusterIP {service['spec'].get('clusterIP')}, owners {owners})")
    return problems, len(sets)


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
        if result["driver"] != node["driver"] or result["pool"] != node["name"] or request is None:
            problems.append(f"{name}: allocated {result} is not a device of its node {node['name']}")
            continue
        device = node["devices"][result["device"]]
        for selector in request["selectors"]:
            if not evaluator.evaluate(selector, device).matched:
                problems.append(f"{name}: {result['device']} on {node['name']} does not satisfy {selector}")
    claims = len((pod.get("status") or {}).get("resourceClaimStatuses") or [])
    return problems, claims, len(results)


def pool_nodes(api: Api, manifests: Manifests, cluster_name: str) -> dict[str, dict[str, Any]]:
    """Each pool's Ready nodes (as many as the planner may fill), each with its ResourceSlice; by name,
    the pool and the devices as our evaluator sees them."""
    cluster = next(c for c in manifests.fleet.clusters if c.name == cluster_name)
    nodes: dict[str, dict[str, Any]] = {}
    for pool in cluster.spec.node_pools:
        inference_class = manifests.fleet.inference_class(pool.class_name)
        gpus = gpu_count(inference_class)
        names = [f"{pool.name}-{i}" for i in range(pool.capacity)]
        if gpu_driver(inference_class) == amd.DRIVER:
            add_amd_nodes(api, names, pool.name, gpus)
            published = {node: [amd.gpu_device(node, m) for m in range(gpus)] for node in names}
        else:
            card = card_of(inference_class)
            add_nodes(api, names, pool.name, card, gpus)
            published = {node: [gpu_device(card, node, m) for m in range(gpus)] for node in names}
        driver = gpu_driver(inference_class)
        for node, devices in published.items():
            nodes[node] = {"name": node, "pool": pool.name, "driver": driver,
                           "devices": {d["name"]: Device.from_class_device({**d, "driver": driver}) for d in devices}}
    return nodes


def expected_pods(folder: Path) -> int:
    """The GPU pods a rendered cluster folder makes: its Deployments that claim devices, its gangs."""
    documents = [doc for path in sorted(folder.rglob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return sum(doc["spec"].get("replicas", 1) for doc in documents
               if doc["kind"] == "Deployment" and doc["spec"]["template"]["spec"].get("resourceClaims")) + sum(
        lws_pod_count(doc) for doc in documents if doc["kind"] == "LeaderWorkerSet")


def check_cluster(api: Api, expected: int, placement: dict[str, Any], nodes: dict[str, dict[str, Any]],
                  counts: dict[str, Any]) -> list[str]:
    """Wait for the cluster's `expected` GPU pods to settle; the problems found, figures into `counts`."""
    problems: list[str] = []
    counts["nodes"] += len(nodes)
    evaluator = SelectorEvaluator()
    pods = settle(api, "", expected, "app.kubernetes.io/managed-by=modelplane") if expected else []
    for pod in pods:
        if not pod["spec"].get("resourceClaims"):
            continue  # a pod that claims no GPU (a ModelCache download): no CPU nodes here
        if GANG_LABEL in pod["metadata"]["labels"]:
            problems += gang_pod_problems(pod)
            counts["gang pods"] += 1
        found, claims, devices = check_pod(api, pod, placement, nodes, evaluator)
        problems += found
        counts["pods bound"] += not found and bool(pod["spec"].get("nodeName"))
        counts["claims allocated"] += claims
        counts["devices allocated"] += devices
    found, gangs = gang_service_problems(api)
    counts["gang headless Services"] += gangs
    return problems + found


def start_fleet(tools: Path, directory: Path, clusters: tuple[str, ...]) -> Fleet:
    """API servers named after the clusters, each with a controller manager, a scheduler and the
    LeaderWorkerSet controller."""
    fleet = Fleet(binaries(tools), directory, clusters, scheduler=True)
    directory.mkdir()
    fleet.start()
    fleet.start_leaderworkerset(LWS_CRDS)
    return fleet


def new_counts(clusters: int) -> dict[str, Any]:
    return {"clusters": clusters, "nodes": 0, "pods bound": 0, "claims allocated": 0, "devices allocated": 0,
            "gang pods": 0, "gang headless Services": 0}


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_real_scheduler_places_what_modelplane_planned(name: str, tools: Path, figures: dict[str, Any],
                                                           tmp_path: Path) -> None:
    manifests, placement, rendered = plan(SETS[name], tmp_path)
    clusters = tuple(c.name for c in manifests.fleet.clusters)
    fleet = start_fleet(tools, tmp_path / "servers", clusters)
    problems: list[str] = []
    counts = new_counts(len(clusters))
    try:
        for cluster in clusters:
            api = Api.of(fleet.clusters[cluster])
            nodes = pool_nodes(api, manifests, cluster)
            folder = rendered / cluster
            expected = apply(api, folder) if folder.is_dir() else 0
            problems += check_cluster(api, expected, placement, nodes, counts)
        if name == "oracle-fleet":
            counts["short, created by hand"] = short_by_hand(fleet, placement, rendered)
    finally:
        fleet.stop()
    figures[name] = counts
    assert problems == []
    assert counts["pods bound"] > 0 or not placement["replicas"]


def test_pulumi_up_of_the_oracle_fleet_is_what_the_scheduler_binds(tools: Path, figures: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """The oracle's fleet (Existing clusters) brought up by the program itself, `pulumi up` on the
    real engine (no serving-stack charts, no readiness waits, a stand-in Gateway controller): the
    placement in the stack's state is the CLI's, and every GPU pod of what the program created is
    bound as that placement says."""
    source = ROOT / "tests" / "e2e" / "scheduling" / "fleet.yaml"
    manifests, planned, rendered = plan([source.parent], tmp_path)
    clusters = tuple(c.name for c in manifests.fleet.clusters)
    fleet = start_fleet(tools, tmp_path / "servers", clusters)
    problems: list[str] = []
    counts = new_counts(len(clusters))
    try:
        nodes = {}
        for cluster in fleet.clusters.values():
            install_crds(cluster)
            nodes[cluster.name] = pool_nodes(Api.of(cluster), manifests, cluster.name)
        project = Project.create(tmp_path / "stack", tools)
        project.write_manifests({source.name: source.read_text()})
        project.config("modelplane:manifests[0]", "manifests", path=True)
        project.brownfield()
        for cluster in manifests.fleet.clusters:
            key = cluster.spec.cluster.existing.kubeconfig
            project.config(f"modelplane:{key}", fleet.clusters[cluster.name].kubeconfig(), secret=True)
        with gateway_addresses(fleet.clusters):
            project.up()
        placement = state_placement(project)
        assert replicas_of(placement) == replicas_of(planned)
        for cluster in clusters:
            problems += check_cluster(Api.of(fleet.clusters[cluster]), expected_pods(rendered / cluster), placement,
                                      nodes[cluster], counts)
    finally:
        fleet.stop()
    figures["oracle-fleet by pulumi up"] = counts
    assert problems == []
    assert counts["pods bound"] == sum(expected_pods(rendered / c) for c in clusters) > 0
    assert counts["gang pods"] > 0
    assert counts["gang headless Services"] > 0


def state_placement(project: Project) -> dict[str, Any]:
    """The placement document the Placement resource holds in the stack's state."""
    resources = json.loads(project.export())["deployment"]["resources"]
    placement = next(r for r in resources if r["type"] == "pulumi-python:dynamic/modelplane:Placement")
    return json.loads(placement["outputs"]["placement"])  # the document as one JSON text


def replicas_of(placement: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    return sorted((r["deployment"], r["cluster"], r["index"], json.dumps(r["engines"], sort_keys=True))
                  for r in placement["replicas"])


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
