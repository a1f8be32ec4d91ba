"""Fleet gateway backends: one routing model (`compose.routing`), two implementations.

`backend(gateway)` is the module that implements the InferenceGateway's `spec.backend`
(`envoy` for EnvoyGateway, `traefik` for Traefik), each meeting `contract.FleetGateway`.
`cluster_stack(cluster, settings, gateway)` is a cluster's serving stack plus the fleet gateway's
add-ons on the cluster that hosts it; `control_stack(settings, gateway)` is the control cluster's
when the gateway runs there (`api.gateway.CONTROL_CLUSTER`): the same backend add-ons, with what a
workload cluster's serving stack would have brought (Envoy Gateway for EnvoyGateway) and nothing
for GPUs. `bind_addresses(manifest, addresses)` puts workload-cluster
addresses where the fleet gateway's objects hold their placeholders, in the form each kind needs;
the Pulumi layer calls it once the addresses are known: bound, the objects rendered with
placeholders equal those rendered with the addresses.
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import CONTROL_CLUSTER, GatewayBackend, InferenceCluster, InferenceGateway
from modelplane.compose import stack
from modelplane.compose.gateways import envoy, traefik
from modelplane.compose.gateways.contract import Destination, FleetGateway
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon

BACKENDS: dict[GatewayBackend, FleetGateway] = {GatewayBackend.ENVOY_GATEWAY: envoy, GatewayBackend.TRAEFIK: traefik}


def backend(gateway: InferenceGateway) -> FleetGateway:
    return BACKENDS[gateway.spec.backend]


def cluster_stack(cluster: InferenceCluster, settings: Settings, gateway: InferenceGateway | None) -> tuple[Addon, ...]:
    """`stack.serving_stack`, with the gateway backend's CRDs first and its add-ons last on the
    cluster that hosts the fleet gateway."""
    if gateway is None or gateway.host != cluster.name:
        return stack.serving_stack(cluster, settings)
    implementation = backend(gateway)
    return stack.serving_stack(cluster, settings, before=implementation.crds(settings),
                               after=implementation.addons(gateway, settings))


def control_stack(settings: Settings, gateway: InferenceGateway) -> tuple[Addon, ...]:
    """The control cluster's add-ons for the fleet gateway that runs there (see the module docstring)."""
    assert gateway.host == CONTROL_CLUSTER, "only a gateway without spec.cluster runs on the control cluster"
    implementation = backend(gateway)
    return stack.control_stack(settings, gateway.spec.backend is GatewayBackend.ENVOY_GATEWAY,
                               before=implementation.crds(settings), after=implementation.addons(gateway, settings))


def bind_addresses(manifest: dict, addresses: Mapping[str, str]) -> dict:
    """`manifest` with each placeholder of `addresses` bound to its address (see the module docstring)."""
    for placeholder, address in sorted(addresses.items()):
        for implementation in BACKENDS.values():
            manifest = implementation.bind_address(manifest, placeholder, address)
    return manifest


__all__ = ["BACKENDS", "Destination", "FleetGateway", "backend", "bind_addresses", "cluster_stack", "control_stack"]
