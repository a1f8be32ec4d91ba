"""The fleet gateway on Traefik Proxy, which rewrites the path per backendRef.

Traefik honours a URLRewrite on each backendRef of a weighted rule (a Gateway API Extended feature;
Traefik builds one middleware per backendRef), so every destination of a ModelService keeps its own
API root and Host: a replica's cluster at `/` beside a hosted provider at `/openai/`, no warning.

What the gateway's cluster gets, in order:
- `crds`: the Gateway API standard-channel CRDs (`gateway_api_version`), one file each, before any
  gateway controller: Traefik's chart ships none, and Traefik v3.7 watches TLSRoute and
  BackendTLSPolicy as `v1`, which the v1.4.1 CRDs in Envoy Gateway v1.7's chart do not serve (that
  chart then skips the CRDs that exist; Envoy Gateway skips the experimental kinds it cannot find).
  The bundle's `safe-upgrades` admission policy is left out: it would refuse the v1.4.1 CRDs that
  Envoy Gateway's chart still creates (TCPRoute, UDPRoute, XListenerSet).
- with `loadBalancer: MetalLB`, MetalLB and its address pool (`metallb`);
- the `traefik` chart (`traefik.version`, else the pinned one) with its Gateway API provider on,
  its Ingress provider off, no Gateway or GatewayClass of its own, the `web` entry point exposed on
  the InferenceGateway's port (with `tls`: `websecure` exposed there, `web` not exposed); then the
  `traefik` GatewayClass.
The fleet Gateway listens on the entry point's own port (`web` 8000; with `tls`, HTTPS on `websecure`
8443 with the named certificate, taking routes only from the services' namespaces), not the Service's.
`auth` is refused by the loader: Traefik Proxy has no API-key middleware (its `basicAuth` checks
htpasswd users, `forwardAuth` delegates to a service of one's own), so API keys need EnvoyGateway.

Objects per ModelService, in its namespace, one per destination so that no two backendRefs share a
Service: Traefik names a backend's middlewares and load balancer after the Service and port, across
all routes (traefik v3.7.1 pkg/provider/kubernetes/gateway/httproute.go), so two destinations with
different rewrites must not share one:
- a selectorless Service `<service>-<destination>` and its EndpointSlice (the address as IPv4,
  IPv6 or FQDN, marked ready: Traefik skips endpoints whose `ready` is unset; ExternalName Services
  are refused by Traefik's Gateway provider); the port is named and `appProtocol`ed `http` or `https`;
- for a TLS destination (an https endpoint; a cluster's gateway with `clusterTLS`), a
  BackendTLSPolicy on the Service (`tls.backend_tls_policy`: SNI and certificate check against its
  TLS hostname, the fleet's CA bundle or the system CAs); with `clusterTLS.clientCertificateSecret`,
  which Traefik cannot present, a cluster's destination is instead the internal Envoy Gateway proxy
  that presents it (`hop`, routing decides: `hop.service_destinations`);
- the HTTPRoute on the fleet Gateway: `/<namespace>/<service>/`, each backendRef rewriting the
  prefix to its destination's path and the Host to its host. No request timeout is set: Traefik
  does not implement HTTPRoute timeouts and sets none of its own on forwarded requests.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from modelplane.api import InferenceGateway, LoadBalancer, ModelService
from modelplane.compose import names
from modelplane.compose.gateways import metallb, tls
from modelplane.compose.gateways.contract import Destination
from modelplane.compose.serving import replica_path
from modelplane.compose.settings import Settings
from modelplane.compose.stack import FLEET_GATEWAY, SYSTEM_NAMESPACE, Addon, gateway_class, namespaces_named
from modelplane.compose.stack import gateway_object as stack_gateway

PER_BACKEND_PATH = True
GATEWAY_CLASS = "traefik"
CONTROLLER = "traefik.io/gateway-controller"
CHART_REPOSITORY = "https://traefik.github.io/charts"
NAMESPACE = "traefik-system"
WEB_PORT = 8000
"""The port of the chart's `web` entry point inside the pod, which a Gateway listener must name."""
WEBSECURE_PORT = 8443
"""The port of the chart's `websecure` entry point inside the pod: the HTTPS listener's, with `tls`."""
GATEWAY_API_CRDS = ("backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes", "listenersets",
                    "referencegrants", "tlsroutes")
"""Every CRD of the Gateway API standard channel (v1.5), by plural."""
_GATEWAY_API = "gateway.networking.k8s.io/v1"


def crds(settings: Settings) -> tuple[Addon, ...]:
    version = settings.gateway_api_version
    return tuple(Addon(name=f"gateway-api-{plural}", chart="", repository="", namespace="", version=version,
                       manifest_url=("https://raw.githubusercontent.com/kubernetes-sigs/gateway-api/"
                                     f"{version}/config/crd/standard/gateway.networking.k8s.io_{plural}.yaml"))
                 for plural in GATEWAY_API_CRDS)


def addons(gateway: InferenceGateway, settings: Settings) -> tuple[Addon, ...]:
    options = gateway.traefik
    load_balancer = (metallb.addons(options.metallb.address_pool, settings)
                     if options.load_balancer is LoadBalancer.METALLB and options.metallb else ())
    chart = Addon(name="traefik", chart="traefik", repository=CHART_REPOSITORY,
                  version=options.version or settings.traefik_version, namespace=NAMESPACE,
                  values=chart_values(gateway),
                  depends_on=(*(crd.name for crd in crds(settings)), *(addon.name for addon in load_balancer[-1:])))
    classes = Addon(name="traefik-gateway-class", chart="", repository="", version="", namespace="",
                          objects=(gateway_class(GATEWAY_CLASS, CONTROLLER),),
                          depends_on=(chart.name,))
    return (*load_balancer, chart, classes)


def chart_values(gateway: InferenceGateway) -> dict[str, Any]:
    """The chart's values (checked against the chart's published values.schema.json in the tests): the
    `web` entry point exposed on the gateway's port, or with `tls` the `websecure` one, `web` unexposed."""
    ports: dict[str, Any] = {"web": {"port": WEB_PORT, "exposedPort": gateway.port}}
    if gateway.spec.tls:
        ports = {"web": {"port": WEB_PORT, "expose": {"default": False}},
                 "websecure": {"port": WEBSECURE_PORT, "exposedPort": gateway.port}}
    return {"providers": {"kubernetesGateway": {"enabled": True}, "kubernetesIngress": {"enabled": False}},
            "gateway": {"enabled": False}, "gatewayClass": {"enabled": False}, "ports": ports}


def gateway_object(gateway: InferenceGateway, namespaces: Sequence[str]) -> dict:
    """On the `web` entry point; with `tls`, HTTPS on `websecure`, taking routes only from the services' namespaces."""
    served = gateway.spec.tls
    if served is None:
        return stack_gateway(FLEET_GATEWAY, WEB_PORT, gateway.spec.hostname, gateway_class=GATEWAY_CLASS,
                             listener="web")
    return stack_gateway(FLEET_GATEWAY, WEBSECURE_PORT, gateway.spec.hostname, gateway_class=GATEWAY_CLASS,
                         listener="websecure", certificate=served.certificate_secret,
                         selector=namespaces_named(namespaces))


def gateway_policies(gateway: InferenceGateway) -> list[dict]:
    """None: Traefik Proxy has no API-key middleware, so the loader refuses `auth` on this backend."""
    return []


def service_objects(service: ModelService, destinations: Sequence[Destination], weights: Sequence[int]) -> list[dict]:
    objects: list[dict] = []
    refs: list[dict] = []
    for destination, weight in zip(destinations, weights):
        name = names.name(service.name, destination.name)
        metadata = {"name": name, "namespace": service.namespace,
                    "labels": {**names.managed(), names.SERVICE: service.name}}
        objects += [backend_service(metadata, destination), endpoint_slice(metadata, destination)]
        if destination.tls is not None:
            objects += [tls.backend_tls_policy(metadata, {"group": "", "kind": "Service", "name": name}, destination.tls),
                        *tls.ca_config_maps(service.namespace, destination.tls)]
        rewrite = {"hostname": destination.host,
                   "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": destination.path}}
        refs.append({"group": "", "kind": "Service", "name": name, "port": destination.port, "weight": weight,
                     "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}]})
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": replica_path(service.namespace, service.name)}}],
            "backendRefs": refs}
    route = {"apiVersion": _GATEWAY_API, "kind": "HTTPRoute",
             "metadata": {"name": service.name, "namespace": service.namespace, "labels": names.managed()},
             "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": FLEET_GATEWAY,
                                      "namespace": SYSTEM_NAMESPACE}],
                      "rules": [rule]}}
    return [*objects, route]


def _protocol(destination: Destination) -> str:
    return "https" if destination.tls is not None else "http"


def backend_service(metadata: dict, destination: Destination) -> dict:
    """A Service without a selector: its one EndpointSlice is `endpoint_slice`."""
    port = {"name": _protocol(destination), "port": destination.port, "protocol": "TCP",
            "appProtocol": _protocol(destination)}
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": {"ports": [port]}}


def endpoint_slice(metadata: dict, destination: Destination) -> dict:
    labels = {**metadata["labels"], "kubernetes.io/service-name": metadata["name"],
              "endpointslice.kubernetes.io/managed-by": names.MODELPLANE}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {**metadata, "labels": labels},
            "addressType": address_type(destination.address),
            "ports": [{"name": _protocol(destination), "port": destination.port, "protocol": "TCP",
                       "appProtocol": _protocol(destination)}],
            "endpoints": [{"addresses": [destination.address], "conditions": {"ready": True}}]}


def address_type(address: str) -> str:
    try:
        return "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"
    except ValueError:
        return "FQDN"


def bind_address(manifest: dict, placeholder: str, address: str) -> dict:
    if (manifest["apiVersion"], manifest["kind"]) != ("discovery.k8s.io/v1", "EndpointSlice"):
        return manifest
    endpoints = [{**endpoint, "addresses": [address if a == placeholder else a for a in endpoint["addresses"]]}
                 for endpoint in manifest["endpoints"]]
    if endpoints == manifest["endpoints"]:
        return manifest
    return {**manifest, "addressType": address_type(address), "endpoints": endpoints}
