"""The hop a Traefik fleet gateway reaches its clusters through when they require its client certificate.

Every cluster's inference Gateway requires the fleet gateway's client certificate
(`clusterTLS.clientCertificateSecret`, `tls.client_validation`). Traefik Proxy cannot present one on a
Gateway API route: its provider builds each backend's TLS settings from the BackendTLSPolicy alone, with
no certificates (traefik v3.7 pkg/provider/kubernetes/gateway/httproute.go, `loadServersTransport`), and
it does not read the Gateway's `spec.tls.backend`. So on a Traefik fleet gateway with a client certificate
(`needed`), the cluster destinations go through an internal Envoy Gateway proxy on the same cluster, which
reaches each cluster exactly as the EnvoyGateway fleet gateway does (`envoy.backend_objects`):

- `gateway_objects(gateway, namespaces)`: the `modelplane-hop` Gateway in modelplane-system (class
  `modelplane`, plain HTTP on `PORT`, routes only from the services' `namespaces`); its EnvoyProxy
  (`envoy.client_proxy`), which presents the client certificate to every TLS backend and runs the proxy
  behind a ClusterIP Service named `modelplane-hop` in envoy-gateway-system (never a load balancer); and a NetworkPolicy there that lets only Traefik's pods
  (namespace traefik-system) reach the hop's proxy pods: any other pod of the cluster could otherwise call
  every cluster with the fleet gateway's identity.
- `service_destinations(gateway, service, destinations)`: each cluster destination becomes the hop's Service
  (`ADDRESS`, plain HTTP inside the cluster) at path `/<namespace>/<backend>/`, its Host unchanged (the
  cluster's gateway routes on it); for each cluster reached, in the service's namespace, the Backend at the
  cluster's address with its BackendTLSPolicy (SNI and certificate check as `<cluster>.<domain>`, the
  fleet's CA) and an HTTPRoute on the hop that strips that path and disables the request timeout, so long
  token streams are never cut. Services of one namespace that reach one cluster share these objects.

Envoy Gateway's Backend API is on where the hop runs, and a control cluster that hosts the gateway gets
Envoy Gateway for it (`envoy_gateway`). Every function is pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from modelplane.api import GatewayBackend, InferenceGateway, ModelService
from modelplane.compose import names
from modelplane.compose.gateways import envoy, tls, traefik
from modelplane.compose.gateways.contract import Destination
from modelplane.compose.isolation import proxy_pods
from modelplane.compose.serving import replica_path
from modelplane.compose.stack import ENVOY_GATEWAY_NAMESPACE, SYSTEM_NAMESPACE, gateway_object, namespaces_named
from modelplane.invariants import present

HOP = "modelplane-hop"
PORT = 8080
"""The hop's listener port: above 1024, so Envoy Gateway's proxy container listens on the same port."""
ADDRESS = f"{HOP}.{ENVOY_GATEWAY_NAMESPACE}.svc"
"""The hop's ClusterIP Service, by the name its EnvoyProxy gives it (resolved through the pod's search domains,
whatever the cluster's domain)."""


def needed(gateway: InferenceGateway) -> bool:
    """Whether `gateway` reaches its clusters through the hop: Traefik with a client certificate."""
    return gateway.spec.backend is GatewayBackend.TRAEFIK and tls.fleet_client_certificate(gateway) is not None


def envoy_gateway(gateway: InferenceGateway) -> bool:
    """Whether the gateway's cluster needs Envoy Gateway with its Backend API for the fleet gateway."""
    return gateway.spec.backend is GatewayBackend.ENVOY_GATEWAY or needed(gateway)


def gateway_objects(gateway: InferenceGateway, namespaces: Sequence[str]) -> list[dict]:
    """The hop's EnvoyProxy, Gateway and NetworkPolicy when `needed`; else nothing."""
    if not needed(gateway):
        return []
    client = present(tls.fleet_client_certificate(gateway), "needed: the gateway has a client certificate")
    proxy = envoy.client_proxy(HOP, client, provider={"type": "Kubernetes", "kubernetes": {
        "envoyService": {"type": "ClusterIP", "name": HOP}}})
    hop = envoy.with_proxy(gateway_object(HOP, PORT, selector=namespaces_named(namespaces)), HOP)
    only_traefik = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": HOP, "namespace": ENVOY_GATEWAY_NAMESPACE, "labels": names.managed()},
                    "spec": {"podSelector": {"matchLabels": proxy_pods(HOP)},
                             "policyTypes": ["Ingress"],
                             "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                                 "kubernetes.io/metadata.name": traefik.NAMESPACE}}}]}]}}
    return [proxy, hop, only_traefik]


def service_destinations(gateway: InferenceGateway, service: ModelService, destinations: Sequence[Destination]
                         ) -> tuple[list[Destination], list[dict]]:
    """What the service's fleet route reaches and the hop's objects for it (see the module docstring);
    `destinations` unchanged and no objects unless `needed`."""
    if not needed(gateway):
        return list(destinations), []
    clusters = [d for d in destinations if d.cluster]
    routes = {d.backend: hop_route(service.namespace, d.backend) for d in clusters}
    through = [replace(d, address=ADDRESS, port=PORT, tls=None, path=replica_path(service.namespace, d.backend))
               if d.cluster else d for d in destinations]
    return through, [*envoy.backend_objects(service.namespace, clusters), *routes.values()]


def hop_route(namespace: str, backend: str) -> dict:
    """The HTTPRoute on the hop from `/<namespace>/<backend>/` to the Backend `backend`, at `/`."""
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": replica_path(namespace, backend)}}],
            "filters": [{"type": "URLRewrite", "urlRewrite": {
                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
            "backendRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": backend, "weight": 1}],
            "timeouts": {"request": "0s"}}
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": names.name(HOP, backend), "namespace": namespace, "labels": names.managed()},
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": HOP,
                                     "namespace": SYSTEM_NAMESPACE}],
                     "rules": [rule]}}
