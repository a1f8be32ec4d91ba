"""Fleet gateway backends: one routing model (`compose.routing`), two implementations.

`backend(gateway)` is the module that implements the InferenceGateway's `spec.backend`
(`envoy` for EnvoyGateway, `traefik` for Traefik), each meeting `contract.FleetGateway`; `tls`
holds what both do alike for TLS. `gateway_objects(gateway, namespaces)` is the fleet Gateway with
its Certificate and policies. `cluster_stack(cluster, settings, gateway)` is a cluster's serving
stack (its inference Gateway over HTTPS with `clusterTLS`) plus the fleet gateway's add-ons on the
cluster that hosts it; `control_stack(settings, gateway)` is the control cluster's when the gateway
runs there (`api.gateway.CONTROL_CLUSTER`): the same backend add-ons, with what a workload cluster's
serving stack would have brought (Envoy Gateway for EnvoyGateway) and nothing for GPUs.
`security_warnings(gateway)` says what a gateway leaves open (plain HTTP, no authentication).
A Traefik fleet gateway whose clusters require its client certificate reaches them through `hop`, an
internal Envoy Gateway proxy that presents it. Envoy Gateway's `Backend` API is on only on the cluster that
hosts an EnvoyGateway fleet gateway or that hop (`hop.envoy_gateway`), the only places Modelplane renders
Backends (`stack._envoy_gateway_values`).
`bind_addresses(manifest, addresses)` puts workload-cluster addresses where the fleet gateway's
objects hold their placeholders, in the form each kind needs; the Pulumi layer calls it once the
addresses are known: bound, the objects rendered with placeholders equal those rendered with the
addresses.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from modelplane.api import CONTROL_CLUSTER, GatewayBackend, InferenceCluster, InferenceGateway
from modelplane.compose import stack
from modelplane.compose.gateways import envoy, hop, tls, traefik
from modelplane.compose.findings import Finding
from modelplane.compose.gateways.contract import Destination, FleetGateway
from modelplane.compose.gateways.tls import TLS
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon
from modelplane.invariants import InvariantError

BACKENDS: dict[GatewayBackend, FleetGateway] = {GatewayBackend.ENVOY_GATEWAY: envoy, GatewayBackend.TRAEFIK: traefik}


def backend(gateway: InferenceGateway) -> FleetGateway:
    return BACKENDS[gateway.spec.backend]


def cluster_stack(cluster: InferenceCluster, settings: Settings, gateway: InferenceGateway | None,
                  drivers: Collection[str] = ()) -> tuple[Addon, ...]:
    """`stack.serving_stack`, with the gateway backend's CRDs first and its add-ons last on the
    cluster that hosts the fleet gateway; `drivers` as there (`stack.class_drivers`)."""
    inference_gateway = tls.cluster_gateway_objects(gateway, cluster.name, cluster.spec.gateway)
    if gateway is None or gateway.host != cluster.name:
        return stack.serving_stack(cluster, settings, inference_gateway=inference_gateway, drivers=drivers)
    implementation = backend(gateway)
    return stack.serving_stack(cluster, settings, before=implementation.crds(settings),
                               after=implementation.addons(gateway, settings), inference_gateway=inference_gateway,
                               drivers=drivers, backends=hop.envoy_gateway(gateway))


def gateway_objects(gateway: InferenceGateway, namespaces: Sequence[str]) -> list[dict]:
    """The fleet Gateway of `gateway`'s backend (taking routes from `namespaces` when secured), the
    Certificate that keeps its Secret (`tls.certManager`) and the policies attached to it."""
    implementation = backend(gateway)
    return [*tls.fleet_certificates(gateway), implementation.gateway_object(gateway, namespaces),
            *implementation.gateway_policies(gateway), *hop.gateway_objects(gateway, namespaces)]


def control_stack(settings: Settings, gateway: InferenceGateway) -> tuple[Addon, ...]:
    """The control cluster's add-ons for the fleet gateway that runs there (see the module docstring)."""
    if gateway.host != CONTROL_CLUSTER:
        raise InvariantError(f"InferenceGateway {gateway.name} runs on {gateway.host}: only a gateway without "
                             "spec.cluster runs on the control cluster")
    implementation = backend(gateway)
    return stack.control_stack(settings, hop.envoy_gateway(gateway),
                               before=implementation.crds(settings), after=implementation.addons(gateway, settings))


def security_warnings(gateway: InferenceGateway | None, clusters: Sequence[InferenceCluster]) -> list[Finding]:
    """What the fleet leaves open: the gateway's plain HTTP (`plainHTTP`, which also opens every cluster's
    gateway) or else its missing authentication, once; and, outside a plain-HTTP fleet, each cluster whose
    inference Gateway takes every caller (`publicInference`)."""
    plain = gateway is not None and gateway.spec.plain_http
    opened = [Finding(cluster, ("spec", "gateway", "publicInference"), "publicInference: anyone who reaches this "
                      "cluster's inference Gateway can call every model on it, without authentication",
                      "public-inference") for cluster in clusters if cluster.spec.public_inference and not plain]
    if gateway is None:
        return opened
    unauthenticated = "" if gateway.spec.auth else ", and without auth anyone who reaches it can call every model"
    if plain:
        return [Finding(gateway, ("spec", "plainHTTP"), "the fleet gateway serves plain HTTP and reaches the clusters' "
                        "gateways over plain HTTP, which take every caller (publicInference): anyone on the path "
                        f"reads prompts and completions{unauthenticated}; "
                        "a local demo only (set tls and clusterTLS for anything else)", "plain-http-gateway")]
    if gateway.spec.auth is None:
        return [Finding(gateway, ("spec", "auth"), "no auth: anyone who reaches the fleet gateway can call every "
                        "model (set auth.apiKeysSecret, on backend EnvoyGateway)", "unauthenticated-gateway"), *opened]
    return opened


def bind_addresses(manifest: dict, addresses: Mapping[str, str]) -> dict:
    """`manifest` with each placeholder of `addresses` bound to its address (see the module docstring)."""
    for placeholder, address in sorted(addresses.items()):
        for implementation in BACKENDS.values():
            manifest = implementation.bind_address(manifest, placeholder, address)
    return manifest


__all__ = ["BACKENDS", "TLS", "Destination", "FleetGateway", "backend", "bind_addresses", "cluster_stack", "control_stack",
           "gateway_objects", "security_warnings"]
