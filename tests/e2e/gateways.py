"""A stand-in for the Gateway controller (Envoy Gateway, Traefik) in the end-to-end suite.

There is no controller and no load balancer here, so nothing would ever fill a Gateway's
`status.addresses`, and the program waits for it (`pulumi.com/waitFor`), as it must on a real
cluster. `gateway_addresses(clusters)` runs `GatewayAddresses` in a thread for the length of a
`with` block: every quarter second it gives each Gateway without an address a host name
`<name>.<namespace>.<cluster>.e2e.modelplane.test`, once. Test infrastructure only: no product
logic lives here. A cluster whose API server does not answer is tried again next round, as a
controller would. On exit it fails if the server ever refused an address.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tests.e2e.conftest import api_client
from modelplane.local.servers import Cluster

GATEWAYS = ("gateway.networking.k8s.io", "v1", "gateways")


@dataclass
class GatewayAddresses:
    """Stand-in for the Gateway controller: gives every Gateway a host-name address, once."""

    clusters: dict[str, Cluster]
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)

    def address(self, cluster: str, namespace: str, name: str) -> str:
        return f"{name}.{namespace}.{cluster}.e2e.modelplane.test"

    def run(self) -> None:
        apis = {name: client.CustomObjectsApi(api_client(cluster)) for name, cluster in self.clusters.items()}
        while not self.stop.wait(0.25):
            for cluster, api in apis.items():
                try:
                    for gateway in api.list_cluster_custom_object(*GATEWAYS)["items"]:
                        if gateway.get("status", {}).get("addresses"):
                            continue
                        meta = gateway["metadata"]
                        value = self.address(cluster, meta["namespace"], meta["name"])
                        api.patch_namespaced_custom_object_status(
                            *GATEWAYS[:2], meta["namespace"], GATEWAYS[2], meta["name"],
                            {"status": {"addresses": [{"type": "Hostname", "value": value}]}})
                except ApiException as error:
                    if error.status not in (404, 409):  # a Gateway deleted or changed meanwhile
                        self.errors.append(f"{cluster}: {error.status} {error.reason}")
                except HTTPError:
                    continue  # its API server is down (tests/e2e/test_faults.py stops one): next round


@contextmanager
def gateway_addresses(clusters: dict[str, Cluster]) -> Iterator[GatewayAddresses]:
    """Run the stand-in while the block runs; fail afterwards if any address could not be written."""
    addresses = GatewayAddresses(clusters)
    thread = threading.Thread(target=addresses.run, daemon=True)
    thread.start()
    try:
        yield addresses
    finally:
        addresses.stop.set()
        thread.join(10)
    assert not addresses.errors, addresses.errors
