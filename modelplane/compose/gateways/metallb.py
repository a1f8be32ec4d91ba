"""MetalLB: LoadBalancer addresses for a gateway's cluster that has no cloud load balancer.

With `traefik.loadBalancer: MetalLB` (kind, bare metal) the gateway's cluster gets the `metallb`
chart (`metallb_version`) and then, once its controller and webhook run, an `IPAddressPool` of
`metallb.addressPool` with an `L2Advertisement` of that pool: MetalLB answers ARP/NDP for the
addresses it hands out, so they must lie in the nodes' own network. Both are named `modelplane` in
`metallb-system`. Any LoadBalancer Service on the cluster draws from the pool, the workload
cluster's own inference Gateway included.
"""

from __future__ import annotations

from modelplane.compose import names
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon

NAMESPACE = "metallb-system"
POOL = "modelplane"
API = "metallb.io/v1beta1"


def addons(address_pool: str, settings: Settings) -> tuple[Addon, Addon]:
    """The chart, then the address pool and its advertisement (last: what the gateway's proxy waits for)."""
    chart = Addon(name="metallb", chart="metallb", repository="https://metallb.github.io/metallb",
                  version=settings.metallb_version, namespace=NAMESPACE)
    pool = Addon(name="metallb-address-pool", chart="", repository="", version="", namespace=NAMESPACE,
                 objects=({"apiVersion": API, "kind": "IPAddressPool", "metadata": _metadata(),
                           "spec": {"addresses": [address_pool]}},
                          {"apiVersion": API, "kind": "L2Advertisement", "metadata": _metadata(),
                           "spec": {"ipAddressPools": [POOL]}}),
                 depends_on=(chart.name,))
    return chart, pool


def _metadata() -> dict:
    return {"name": POOL, "namespace": NAMESPACE, "labels": names.managed()}
