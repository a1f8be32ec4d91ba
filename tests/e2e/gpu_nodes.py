"""GPU nodes as API objects, for the real kube-scheduler and DRA allocator: Nodes (Ready, the labels
and taint our cluster components put on GPU nodes, no kubelet) and one ResourceSlice per node as
the NVIDIA DRA driver publishes it (tests/nvidia.py) or AMD's (tests/amd.py), and reading back where
pods landed.

`Api` is a thin raw-JSON client (dicts in, dicts out, every call bounded in time). `add_nodes`
creates nodes the way a kubelet-less cluster can have them: the TaintNodesByCondition admission
plugin gives a new Node the `not-ready` taint, which the node lifecycle controller (off in a
scheduling fleet, servers.py) would remove once the kubelet reports Ready; here the test replaces
the taints with the GPU taint and writes the Ready condition and the allocatable itself.
`settle` waits, bounded, until every listed pod is bound or the scheduler has said why not, for good.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from modelplane.api import Claim, InferenceClass
from modelplane.cel.quantity import parse_quantity
from tests.e2e.conftest import api_client
from modelplane.local.servers import Cluster
from tests import amd
from tests.nvidia import DEVICE_CLASS, Card, card_for, node, resource_slice

SETTLE_SECONDS = 120.0
PATIENCE_SECONDS = 20.0
ALLOCATABLE = {"cpu": "192", "memory": "2Ti", "pods": "110", "ephemeral-storage": "2Ti"}


@dataclass
class Api:
    client: ApiClient

    @classmethod
    def of(cls, cluster: Cluster) -> Api:
        return cls(api_client(cluster))

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One request; a non-2xx answer raises ApiException with the server's status and body."""
        method, url, headers, body, _ = self.client.param_serialize(
            method, path, header_params={"Content-Type": content_type, "Accept": "application/json"}, body=body,
            auth_settings=["BearerToken"])
        response = self.client.call_api(method, url, header_params=headers, body=body, _request_timeout=30)
        data = response.read()
        if not 200 <= response.status < 300:
            raise ApiException(status=response.status, reason=response.reason, body=data.decode(errors="replace"))
        return json.loads(data) if data else None

    def create(self, path: str, body: dict[str, Any]) -> Any:
        return self.call("POST", path, body)

    def items(self, path: str) -> list[dict[str, Any]]:
        return self.call("GET", path)["items"]

    def ensure(self, path: str, body: dict[str, Any]) -> None:
        try:
            self.create(path, body)
        except ApiException as error:
            if error.status != 409:
                raise


def card_of(inference_class: InferenceClass) -> Card:
    """The card whose slices stand for the class's GPUs (tests/nvidia.py `card_for`)."""
    device = next(d for d in inference_class.spec.devices if d.claim is Claim.DRA)
    product = device.attributes.get("productName")
    architecture = device.attributes.get("architecture")
    memory = device.capacity.get("memory")
    mebibytes = float(parse_quantity(memory.value).amount / 2**20) if memory else 0.0
    return card_for(architecture.value if architecture else None, product.value if product else None, mebibytes)


def gpu_count(inference_class: InferenceClass) -> int:
    return next(d.count for d in inference_class.spec.devices if d.claim is Claim.DRA)


def gpu_driver(inference_class: InferenceClass) -> str:
    """The DRA driver of the class's GPUs (`gpu.nvidia.com`, `gpu.amd.com`)."""
    return next(d.driver for d in inference_class.spec.devices if d.claim is Claim.DRA)


def ready_node(api: Api, body: dict[str, Any]) -> None:
    """Create the Node, give it back its own taints (admission added `not-ready`), mark it Ready."""
    name = body["metadata"]["name"]
    api.create("/api/v1/nodes", body)
    taints = body.get("spec", {}).get("taints") or None
    api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints}}, "application/merge-patch+json")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "message": "no kubelet: Ready written by the test",
                                         "lastHeartbeatTime": now, "lastTransitionTime": now}],
                         "allocatable": ALLOCATABLE, "capacity": ALLOCATABLE}}
    api.call("PATCH", f"/api/v1/nodes/{name}/status", status, "application/merge-patch+json")


def add_nodes(api: Api, names: Iterable[str], pool: str, card: Card, gpus: int) -> None:
    """Ready GPU nodes of `pool`, each with its ResourceSlice, and the driver's DeviceClass."""
    api.ensure("/apis/resource.k8s.io/v1/deviceclasses", DEVICE_CLASS)
    for name in names:
        ready_node(api, node(name, pool))
        api.create("/apis/resource.k8s.io/v1/resourceslices", resource_slice(name, card, gpus))


def add_amd_nodes(api: Api, names: Iterable[str], pool: str, gpus: int) -> None:
    """Ready MI300X nodes of `pool`, each with its ResourceSlice, and AMD's DeviceClass (tests/amd.py)."""
    api.ensure("/apis/resource.k8s.io/v1/deviceclasses", amd.DEVICE_CLASS)
    for name in names:
        ready_node(api, amd.node(name, pool))
        api.create("/apis/resource.k8s.io/v1/resourceslices", amd.resource_slice(name, gpus))


def namespace(api: Api, name: str, seconds: float = 60.0) -> None:
    """The namespace, once its default ServiceAccount exists (pods are refused before)."""
    api.ensure("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + seconds
    while not any(sa["metadata"]["name"] == "default" for sa in api.items(f"/api/v1/namespaces/{name}/serviceaccounts")):
        if time.monotonic() > deadline:
            raise AssertionError(f"namespace {name}: no default ServiceAccount after {seconds:.0f} s")
        time.sleep(0.2)


def scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)


def settled(pod: dict[str, Any]) -> bool:
    """Bound, or refused by the scheduler (PodScheduled False with its reason)."""
    condition = scheduled(pod)
    return bool(pod["spec"].get("nodeName")) or (condition is not None and condition["status"] == "False")


def settle(api: Api, namespace: str, expected: int, selector: str = "", seconds: float = SETTLE_SECONDS,
           patience: float = PATIENCE_SECONDS) -> list[dict[str, Any]]:
    """The namespace's pods (every namespace's with ""), once `expected` exist and each is settled,
    and, if some are not bound, no pod has been bound for `patience` seconds (the scheduler retries
    a pod refused for a passing reason, such as a volume claim not bound yet). Bounded wait."""
    deadline = time.monotonic() + seconds
    path = (f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods") + (
        f"?labelSelector={selector}" if selector else "")
    bound, since = -1, time.monotonic()
    while True:
        pods = api.items(path)
        now_bound = sum(bool(p["spec"].get("nodeName")) for p in pods)
        if now_bound != bound:
            bound, since = now_bound, time.monotonic()
        if len(pods) >= expected and all(settled(p) for p in pods) and (
                bound == len(pods) or time.monotonic() - since >= patience):
            return pods
        if time.monotonic() > deadline:
            waiting = [p["metadata"]["name"] for p in pods if not settled(p)]
            raise AssertionError(f"{namespace or 'all namespaces'}: {len(pods)}/{expected} pods after "
                                 f"{seconds:.0f} s, not settled: {waiting[:10]}")
        time.sleep(0.5)


def allocation(api: Api, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The device results of every ResourceClaim of the pod (from its status' claim names)."""
    namespace = pod["metadata"]["namespace"]
    results = []
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        claim = api.call("GET", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/"
                                f"{status['resourceClaimName']}")
        results += ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    return results
