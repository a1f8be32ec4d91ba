"""The fleet gateway on Envoy Gateway: the proxy every workload cluster already runs.

Objects per ModelService: an Envoy Gateway `Backend` per destination's `backend` (`ip` for an IP
literal, else `fqdn`), shared by every service of the namespace that reaches it, with, for a TLS
destination (an https endpoint; a cluster's gateway with `clusterTLS`), a `BackendTLSPolicy` on it
(`tls.backend_tls_policy`; Envoy Gateway matches a policy to a backendRef by group, kind and name),
and one HTTPRoute on the fleet Gateway with one rule whose URLRewrite replaces `/<namespace>/<service>/` by the destinations' common path (`/` when they
differ: routing warns) and, when all share one, the Host. Otherwise each backendRef carries a
hostname-only URLRewrite. The rule disables the request timeout, so long token streams are never cut.

Why one path for the whole rule: Envoy Gateway accepts a per-backendRef *path* rewrite and ignores
it (v1.7, envoyproxy/gateway#7099, #9095) or refuses it (#9131): Envoy's weighted clusters have no
per-cluster prefix rewrite (envoyproxy/envoy#7668). A per-backendRef *hostname* rewrite works from
v1.7 (envoyproxy/gateway#7826, Envoy's per-cluster `host_rewrite_literal`).

Nothing to install: the gateway's cluster runs Envoy Gateway and the `modelplane` GatewayClass as
part of its serving stack.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from modelplane.api import InferenceGateway, ModelService
from modelplane.compose import names
from modelplane.compose.gateways import keys, tls
from modelplane.compose.gateways.contract import Destination
from modelplane.compose.serving import replica_path
from modelplane.compose.settings import Settings
from modelplane.compose.stack import FLEET_GATEWAY, SYSTEM_NAMESPACE, Addon, namespaces_named
from modelplane.compose.stack import gateway_object as stack_gateway

PER_BACKEND_PATH = False
BACKEND_API = "gateway.envoyproxy.io/v1alpha1"


def crds(settings: Settings) -> tuple[Addon, ...]:
    return ()


def addons(gateway: InferenceGateway, settings: Settings) -> tuple[Addon, ...]:
    return ()


def gateway_object(gateway: InferenceGateway, namespaces: Sequence[str]) -> dict:
    """The fleet Gateway; a secured one (`tls` or `auth`) takes routes only from the services' namespaces;
    with a client certificate for the cluster hop, its proxy runs with the EnvoyProxy of `gateway_policies`."""
    served, secured = gateway.spec.tls, gateway.spec.tls is not None or gateway.spec.auth is not None
    fleet = stack_gateway(FLEET_GATEWAY, gateway.port, gateway.spec.hostname,
                          selector=namespaces_named(namespaces) if secured else None,
                          certificate=served.certificate_secret if served else None)
    return fleet if tls.fleet_client_certificate(gateway) is None else with_proxy(fleet, FLEET_GATEWAY)


def with_proxy(gateway: dict, proxy: str) -> dict:
    """`gateway` (a Gateway object) run by Envoy Gateway with the settings of the EnvoyProxy `proxy` beside it."""
    parameters = {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": proxy}
    return {**gateway, "spec": {**gateway["spec"], "infrastructure": {"parametersRef": parameters}}}


def client_proxy(name: str, client: str, **spec: dict) -> dict:
    """The EnvoyProxy `name` in modelplane-system that presents the client certificate of Secret `client` (beside
    it) to every TLS backend (`backendTLS.clientCertificateRef`), with the rest of `spec`."""
    return {"apiVersion": BACKEND_API, "kind": "EnvoyProxy",
            "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": names.managed()},
            "spec": {"backendTLS": {"clientCertificateRef": {"group": "", "kind": "Secret", "name": client}}, **spec}}


def gateway_policies(gateway: InferenceGateway) -> list[dict]:
    """With a client certificate for the cluster hop (`clusterTLS.clientCertificateSecret`), the fleet
    Gateway's EnvoyProxy: it presents that certificate to every TLS backend (Envoy Gateway's
    `backendTLS.clientCertificateRef`, the Secret beside it in modelplane-system). With `auth`, its API keys
    (`keys.api_key_policy`)."""
    client = tls.fleet_client_certificate(gateway)
    proxy = [] if client is None else [client_proxy(FLEET_GATEWAY, client)]
    if gateway.spec.auth is None:
        return proxy
    return [*proxy, keys.api_key_policy(FLEET_GATEWAY, gateway.spec.auth)]


def service_objects(service: ModelService, destinations: Sequence[Destination], weights: Sequence[int]) -> list[dict]:
    """`backend_objects` of the destinations, then the route."""
    return [*backend_objects(service.namespace, destinations), fleet_route(service, destinations, weights)]


def backend_objects(namespace: str, destinations: Sequence[Destination]) -> list[dict]:
    """A Backend per destination's `backend` in `namespace` (with its BackendTLSPolicy and the CA it names
    over TLS), each once."""
    objects: dict[tuple[str, str], dict] = {}
    for d in destinations:
        backend = backend_object(d.backend, namespace, d.address, d.port)
        objects[("Backend", d.backend)] = backend
        if d.tls is not None:
            target = {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": d.backend}
            objects[("BackendTLSPolicy", d.backend)] = tls.backend_tls_policy(backend["metadata"], target, d.tls)
            objects.update({("ConfigMap", m["metadata"]["name"]): m for m in tls.ca_config_maps(namespace, d.tls)})
    return list(objects.values())


def fleet_route(service: ModelService, destinations: Sequence[Destination], weights: Sequence[int]) -> dict:
    """The service's HTTPRoute on the fleet Gateway: one path rewrite on the rule, Hosts as the module says."""
    paths = {d.path for d in destinations}
    hosts = {d.host for d in destinations}
    rewrite: dict = {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": paths.pop() if len(paths) == 1 else "/"}}
    refs = [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": d.backend, "weight": weight}
            for d, weight in zip(destinations, weights)]
    if len(hosts) == 1:
        rewrite["hostname"] = hosts.pop()
    else:
        refs = [{**ref, "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": d.host}}]}
                for ref, d in zip(refs, destinations)]
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": replica_path(service.namespace, service.name)}}],
            "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}],
            "backendRefs": refs, "timeouts": {"request": "0s"}}
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": service.name, "namespace": service.namespace, "labels": names.managed()},
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": FLEET_GATEWAY,
                                     "namespace": SYSTEM_NAMESPACE}],
                     "rules": [rule]}}


def backend_object(name: str, namespace: str, host: str, port: int) -> dict:
    return {"apiVersion": BACKEND_API, "kind": "Backend",
            "metadata": {"name": name, "namespace": namespace, "labels": names.managed()},
            "spec": {"endpoints": [backend_endpoint(host, port)]}}


def backend_endpoint(host: str, port: int) -> dict:
    """A Backend endpoint: `ip` for an IP literal, else `fqdn`."""
    return {"ip": {"address": host, "port": port}} if is_ip(host) else {"fqdn": {"hostname": host, "port": port}}


def bind_address(manifest: dict, placeholder: str, address: str) -> dict:
    if (manifest["apiVersion"], manifest["kind"]) != (BACKEND_API, "Backend"):
        return manifest
    endpoints = [backend_endpoint(address, endpoint["fqdn"]["port"])
                 if endpoint.get("fqdn", {}).get("hostname") == placeholder else endpoint
                 for endpoint in manifest["spec"]["endpoints"]]
    return {**manifest, "spec": {**manifest["spec"], "endpoints": endpoints}}


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
