"""Fleet routing: a ModelEndpoint per placed replica, and one weighted route per ModelService.

Invariants:
- Each placed replica has a ModelEndpoint (same shape as a user's) named after the replica, with
  the deployment's labels plus `modelplane.ai/deployment|cluster|replica-index`, URL
  `http://<cluster gateway address>/<namespace>/<replica>/` and rewritePath `/<namespace>/<replica>/`.
  A cluster whose address is not given gets `address_placeholder(cluster)` in exactly the leaf
  strings that hold it: inside the endpoint's `url`, and as a Backend's `fqdn.hostname`.
- A ModelService becomes one HTTPRoute on the fleet Gateway matching `/<namespace>/<service>/`;
  everything below that prefix passes through (`/v1/chat/completions`, `/v1/models`, ...), with the
  prefix rewritten to each endpoint's rewritePath (an external endpoint's defaults to its URL path).
- Each `spec.endpoints[]` group's weight is divided evenly across the endpoints (in the service's
  namespace, placed or external) its selector matches; an endpoint two groups match gets both
  shares. Shares become the smallest proportional integers Gateway API accepts (at most 1,000,000).
- Backends are Envoy Gateway `Backend`s (`gateway.envoyproxy.io/v1alpha1`): one per workload
  cluster gateway a service reaches, one per external endpoint; `ip` for an IP literal, else `fqdn`.

Envoy Gateway applies a URLRewrite per backendRef only for the hostname (envoyproxy/gateway#7826,
v1.7); a per-backendRef *path* rewrite is accepted and silently ignored (v1.7, envoyproxy/gateway#9095)
and refused by later releases (#9131), because Envoy's weighted clusters have no per-cluster
prefix rewrite (envoyproxy/envoy#7668). So the rewrite sits on the rule when every backend shares it, and when paths differ the
route carries the Gateway API's per-backendRef form and a warning says the fleet gateway must
support it.
"""

from __future__ import annotations

import ipaddress
from fractions import Fraction
from math import gcd, lcm
from urllib.parse import urlsplit

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.compose import names
from modelplane.compose.findings import Finding
from modelplane.compose.replica import ReplicaContext
from modelplane.compose.serving import replica_path
from modelplane.compose.stack import FLEET_GATEWAY, GATEWAY_PORT, SYSTEM_NAMESPACE, gateway_object

MAX_WEIGHT = 1_000_000
_ENVOY_BACKEND = "gateway.envoyproxy.io/v1alpha1"


def address_placeholder(cluster: str) -> str:
    """Stands for a workload cluster's gateway address until the cluster exists. It is a valid DNS
    name, so objects holding it still validate; the Pulumi layer substitutes the real address (an
    Output) wherever this string appears, whole or inside a URL."""
    return f"{cluster}.gateway-address.modelplane.invalid"


def endpoint_view(ctx: ReplicaContext, address: str) -> dict:
    """The ModelEndpoint of one placed replica."""
    path = replica_path(ctx.namespace, ctx.name)
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelEndpoint",
            "metadata": {"name": ctx.name, "namespace": ctx.namespace,
                         "labels": {**ctx.deployment.metadata.labels, **ctx.labels()}},
            "spec": {"url": f"http://{address}{path}", "rewritePath": path}}


def user_endpoint_view(endpoint: ModelEndpoint) -> dict:
    spec = {"url": endpoint.spec.url, "rewritePath": endpoint.spec.rewrite_path or urlsplit(endpoint.spec.url).path or "/"}
    return {"apiVersion": endpoint.api_version, "kind": "ModelEndpoint",
            "metadata": {"name": endpoint.name, "namespace": endpoint.namespace, "labels": dict(endpoint.metadata.labels)},
            "spec": spec}


def fleet_objects(gateway: InferenceGateway, services: tuple[ModelService, ...],
                  endpoints: list[dict]) -> tuple[list[dict], list[Finding]]:
    """The fleet Gateway, and each ModelService's HTTPRoute and Backends; plus the warnings."""
    objects = [gateway_object(FLEET_GATEWAY, gateway.spec.port, gateway.spec.hostname)]
    findings: list[Finding] = []
    for service in services:
        mine = [e for e in endpoints if e["metadata"]["namespace"] == service.namespace]
        built, found = service_route(service, mine)
        objects += built
        findings += found
    return objects, findings


def service_route(service: ModelService, endpoints: list[dict]) -> tuple[list[dict], list[Finding]]:
    findings: list[Finding] = []
    shares: dict[str, Fraction] = {}
    for index, group in enumerate(service.spec.endpoints):
        matched = [e for e in endpoints if group.selector.matches(e["metadata"]["labels"])]
        if not matched:
            findings.append(Finding(service, ("spec", "endpoints", index, "selector"),
                                    f"selects no ModelEndpoint in namespace {service.namespace!r} (no placed replica "
                                    f"or external endpoint has these labels); its weight {group.weight} is unused",
                                    "service-selects-nothing"))
        for endpoint in matched:
            name = endpoint["metadata"]["name"]
            shares[name] = shares.get(name, Fraction(0)) + Fraction(group.weight, len(matched))
    if not shares:
        findings.append(Finding(service, ("spec", "endpoints"), "no endpoint to route to, so the service is not "
                                "published on the fleet gateway until one of its selectors matches", "service-empty"))
        return [], findings

    weights = integer_weights(shares)
    by_name = {e["metadata"]["name"]: e for e in endpoints}
    backends: dict[str, dict] = {}
    refs: list[tuple[dict, dict]] = []
    for name in sorted(weights):
        backend, rewrite = backend_for(by_name[name], service.namespace)
        backends[backend["metadata"]["name"]] = backend
        refs.append(({"group": "gateway.envoyproxy.io", "kind": "Backend", "name": backend["metadata"]["name"],
                      "weight": weights[name]}, rewrite))

    rule: dict = {"matches": [{"path": {"type": "PathPrefix", "value": replica_path(service.namespace, service.name)}}]}
    rewrites = [rewrite for _, rewrite in refs]
    if all(rewrite == rewrites[0] for rewrite in rewrites):
        rule["filters"] = [{"type": "URLRewrite", "urlRewrite": rewrites[0]}]
        rule["backendRefs"] = [ref for ref, _ in refs]
    else:
        rule["backendRefs"] = [{**ref, "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}]} for ref, rewrite in refs]
        paths = sorted({rewrite["path"]["replacePrefixMatch"] for rewrite in rewrites})
        if len(paths) > 1:
            findings.append(Finding(service, ("spec", "endpoints"),
                                    f"its endpoints take {len(paths)} different paths ({', '.join(paths)}), so the fleet "
                                    "route rewrites the path per backend (Gateway API HTTPBackendRef URLRewrite); "
                                    "Envoy Gateway does not apply per-backend path rewrites (envoyproxy/gateway#9095), "
                                    "so on it requests keep the service's path: the fleet gateway must support them",
                                    "per-backend-path-rewrite"))
    rule["timeouts"] = {"request": "0s"}
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": service.name, "namespace": service.namespace, "labels": names.managed()},
             "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": FLEET_GATEWAY,
                                      "namespace": SYSTEM_NAMESPACE}],
                      "rules": [rule]}}
    return [*(backends[name] for name in sorted(backends)), route], findings


def backend_for(endpoint: dict, namespace: str) -> tuple[dict, dict]:
    """The Backend that reaches `endpoint`, and the URLRewrite its requests need."""
    url = urlsplit(endpoint["spec"]["url"])
    host = url.hostname or ""
    https = url.scheme == "https"
    port = url.port or (443 if https else GATEWAY_PORT)
    labels = endpoint["metadata"]["labels"]
    placed = names.CLUSTER in labels and labels.get(names.MANAGED_BY) == names.MODELPLANE
    name = names.name("gateway", labels[names.CLUSTER]) if placed else names.name(endpoint["metadata"]["name"])
    address = {"ip": {"address": host, "port": port}} if _is_ip(host) else {"fqdn": {"hostname": host, "port": port}}
    spec: dict = {"endpoints": [address]}
    if https:
        spec["tls"] = {"wellKnownCACertificates": "System"}
    backend = {"apiVersion": _ENVOY_BACKEND, "kind": "Backend",
               "metadata": {"name": name, "namespace": namespace, "labels": names.managed()}, "spec": spec}
    rewrite: dict = {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": endpoint["spec"]["rewritePath"]}}
    if not placed:
        rewrite["hostname"] = host
    return backend, rewrite


def integer_weights(shares: dict[str, Fraction]) -> dict[str, int]:
    """The smallest integers proportional to `shares`, scaled down to at most MAX_WEIGHT (never 0)."""
    scale = lcm(*(share.denominator for share in shares.values()))
    whole = {key: int(share * scale) for key, share in shares.items()}
    common = gcd(*whole.values())
    whole = {key: value // common for key, value in whole.items()}
    top = max(whole.values())
    if top > MAX_WEIGHT:
        whole = {key: max(1, round(value * MAX_WEIGHT / top)) for key, value in whole.items()}
    return whole


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True

