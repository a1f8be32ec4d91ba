"""Reading the e2e API servers with the official `kubernetes` client (dynamic client), for assertions.

`objects(cluster, kind)` lists one kind in the `ml-team` namespace; `versions` their resourceVersions
(to prove objects were left untouched); `managed_left` what of ours remains on a cluster;
`settled(read)` polls until a read comes back empty, within a bound, because with skipAwait the
provider does not wait for deletions that the garbage collector finishes asynchronously.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes.dynamic import DynamicClient

from tests.e2e.conftest import api_client
from modelplane.local.servers import Cluster

NS = "ml-team"
DELETE_SECONDS = 120.0
API_VERSIONS = {"Deployment": "apps/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1", "Service": "v1",
                "Secret": "v1", "Job": "batch/v1", "PersistentVolumeClaim": "v1",
                "ResourceClaimTemplate": "resource.k8s.io/v1", "HTTPRoute": "gateway.networking.k8s.io/v1",
                "InferencePool": "inference.networking.k8s.io/v1", "Backend": "gateway.envoyproxy.io/v1alpha1",
                "Namespace": "v1", "GatewayClass": "gateway.networking.k8s.io/v1"}
MANAGED = "app.kubernetes.io/managed-by=modelplane"


def listed(cluster: Cluster, kind: str, namespace: str | None = NS, selector: str | None = None
           ) -> dict[str, dict[str, Any]]:
    """Name -> object of one kind (in `namespace`, or cluster-wide with None), read from the server."""
    resource = DynamicClient(api_client(cluster)).resources.get(api_version=API_VERSIONS[kind], kind=kind)
    found = resource.get(namespace=namespace, label_selector=selector).to_dict()
    return {item["metadata"]["name"]: item for item in found["items"]}


def objects(cluster: Cluster, kind: str) -> dict[str, dict[str, Any]]:
    """Name -> object of one kind in the ml-team namespace."""
    return listed(cluster, kind)


def versions(cluster: Cluster, kinds: tuple[str, ...] = ("Deployment", "LeaderWorkerSet")) -> dict[str, str]:
    return {f"{kind}/{name}": item["metadata"]["resourceVersion"]
            for kind in kinds for name, item in objects(cluster, kind).items()}


def managed_left(cluster: Cluster) -> list[str]:
    """What of ours is on a cluster, being deleted or not: Namespaces and GatewayClasses with
    modelplane's managed-by label, and any object of the kinds compose emits in the ml-team namespace."""
    left = [f"{kind}/{name}" for kind in ("Namespace", "GatewayClass") for name in listed(cluster, kind, None, MANAGED)]
    for kind in ("Deployment", "LeaderWorkerSet", "Service", "Secret", "Job", "HTTPRoute", "Backend",
                 "ResourceClaimTemplate", "PersistentVolumeClaim", "InferencePool"):
        left += [f"{kind}/{name}" for name in objects(cluster, kind)]
    return left


def settled(read: Callable[[], Any], seconds: float = DELETE_SECONDS) -> Any:
    """`read()` once it returns something empty, or its last answer after `seconds`. With skipAwait
    the provider does not wait for a deletion to finish, and the garbage collector removes
    foreground-deleted objects (and their ReplicaSets, Pods and ResourceClaims) asynchronously."""
    deadline = time.monotonic() + seconds
    while (found := read()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found
