"""Fleet routing: a ModelEndpoint per placed replica, and each ModelService as two levels of routes.

Invariants:
- Each placed replica has a ModelEndpoint (same shape as a user's) named after the replica, with
  the deployment's labels plus `modelplane.ai/deployment|cluster|replica-index`, URL
  `http://<cluster gateway address>/<namespace>/<replica>/` and rewritePath `/<namespace>/<replica>/`
  (its own route on its cluster, `serving.replica_route`). A cluster whose address is not given gets
  `address_placeholder(cluster)` in exactly the leaf strings that hold it: inside the endpoint's
  `url`, and as a Backend's `fqdn.hostname`.
- Which endpoints a service selects, and their shares, follow the ModelService rule (`weights`).
- Fleet level (with an InferenceGateway): per service, one HTTPRoute on the fleet Gateway matching
  `/<namespace>/<service>/`, whose one rule-level URLRewrite replaces that prefix with `/`, so
  `/<ns>/<service>/v1/chat/completions` arrives as `/v1/chat/completions`. Its backendRefs (targets)
  are Envoy Gateway `Backend`s (`ip` for an IP literal, else `fqdn`): each workload cluster that runs
  a selected replica, through its gateway's address, and each selected external endpoint.
- The Host header says which service a cluster is asked for: a cluster target gets
  `service_host(namespace, service)`, an internal name that is only ever a Host header (no DNS
  record exists or is needed); an external target gets its URL's host. When every target takes the
  same Host it sits in the rule's URLRewrite, else each backendRef carries a hostname-only URLRewrite.
- Cluster level: for each cluster target, one HTTPRoute on that cluster's inference Gateway with
  `hostnames: [<its Host>]` and PathPrefix `/`, whose backendRefs are exactly what each local
  selected replica's own route points at (its Unified Services, or its InferencePool), weighted so
  that every replica's end-to-end share is its share under the ModelService rule.
- One rule may reference one InferencePool and nothing else, so a PrefillDecode replica that shares
  its cluster with other selected replicas is a target of its own, with Host
  `<replica>.<service host>` and its own cluster route; the fleet route then reaches that cluster's
  Backend once per Host (per-backendRef hostname rewrites).
- Both levels disable the request timeout, so long token streams are never cut.

Why this shape (Envoy Gateway, the fleet's and every cluster's gateway): a URLRewrite on a rule
works, but a per-backendRef *path* rewrite is accepted and silently ignored (v1.7,
envoyproxy/gateway#9095) and refused by later releases (#9131), because Envoy's weighted clusters
have no per-cluster prefix rewrite (envoyproxy/envoy#7668); a per-backendRef *hostname* rewrite works
from v1.7 (envoyproxy/gateway#7826, Envoy's per-cluster `host_rewrite_literal`). So the path is
rewritten once, to `/`, for every target, and targets are told apart by Host. An external endpoint
whose API root is not `/` (rewritePath, else its URL path) can only be right when the service's
targets all share its path; otherwise it still gets `/` and a `per-backend-path-rewrite` warning
says how to fix it. Envoy AI Gateway (the InferencePool extension) configures one endpoint picker
per rule and makes that rule's cluster an original-destination cluster: "at most one inferencepool
can be referenced per route rule" (envoyproxy/ai-gateway internal/extensionserver/post_cluster_modify.go).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from urllib.parse import urlsplit

from modelplane.api import API_VERSION, InferenceGateway, ModelEndpoint, ModelService
from modelplane.compose import names, prefill_decode, serving, weights
from modelplane.compose.findings import Finding
from modelplane.compose.replica import ReplicaContext
from modelplane.compose.stack import FLEET_GATEWAY, GATEWAY_PORT, SYSTEM_NAMESPACE, gateway_object

SERVICE_DOMAIN = "modelplane.internal"
"""Parent of every service host: `.internal` is reserved for private use and never resolves publicly."""
_ENVOY_BACKEND = "gateway.envoyproxy.io/v1alpha1"

Endpoint = ReplicaContext | ModelEndpoint
"""A ModelEndpoint a service can select: a placed replica's, or a user's external one."""


def address_placeholder(cluster: str) -> str:
    """Stands for a workload cluster's gateway address until the cluster exists. It is a valid DNS
    name, so objects holding it still validate; the Pulumi layer substitutes the real address (an
    Output) wherever this string appears, whole or inside a URL."""
    return f"{cluster}.gateway-address.modelplane.invalid"


def service_host(namespace: str, service: str) -> str:
    """The Host header by which a workload cluster's gateway knows a ModelService."""
    return f"{service}.{namespace}.{SERVICE_DOMAIN}"


def endpoint_view(ctx: ReplicaContext, address: str) -> dict:
    """The ModelEndpoint of one placed replica."""
    path = serving.replica_path(ctx.namespace, ctx.name)
    return {"apiVersion": API_VERSION, "kind": "ModelEndpoint",
            "metadata": {"name": ctx.name, "namespace": ctx.namespace, "labels": endpoint_labels(ctx)},
            "spec": {"url": f"http://{address}{path}", "rewritePath": path}}


def endpoint_labels(endpoint: Endpoint) -> dict[str, str]:
    if isinstance(endpoint, ModelEndpoint):
        return dict(endpoint.metadata.labels)
    return {**endpoint.deployment.metadata.labels, **endpoint.labels()}


def serving_refs(ctx: ReplicaContext) -> list[dict]:
    """What the replica's own route points at: its InferencePool, or its Unified Services."""
    return prefill_decode.pool_refs(ctx) if ctx.prefill_decode else serving.unified_refs(ctx)


@dataclass(frozen=True)
class Target:
    """One backendRef of a service's fleet route, and what lies behind it."""

    backend: dict
    """The Envoy Gateway Backend the fleet gateway reaches it through."""
    host: str
    """The Host header it is addressed by."""
    path: str
    """Where its OpenAI API is rooted: `/` on a cluster; an external endpoint's rewritePath or URL path."""
    shares: tuple[Fraction, ...]
    """The shares of its leaves: the backendRefs in `refs`, or the external endpoint alone."""
    refs: tuple[dict, ...] = ()
    """The backendRefs of its route on `cluster` (none for an external endpoint)."""
    cluster: str = ""
    """The workload cluster whose gateway serves `host`; empty for an external endpoint."""
    route: str = ""
    """The name of its HTTPRoute on `cluster`."""


def fleet_objects(gateway: InferenceGateway, services: Sequence[ModelService], endpoints: Sequence[Endpoint],
                  addresses: Mapping[str, str]) -> tuple[list[dict], dict[str, list[dict]], list[Finding]]:
    """The fleet Gateway with each service's Backends and HTTPRoute; each cluster's service routes; warnings.

    `addresses` holds every cluster's gateway address (or its placeholder).
    """
    fleet = [gateway_object(FLEET_GATEWAY, gateway.spec.port, gateway.spec.hostname)]
    clusters: dict[str, list[dict]] = {}
    findings: list[Finding] = []
    for service in services:
        mine = [e for e in endpoints if e.namespace == service.namespace]
        shares, found = weights.endpoint_shares(service, [endpoint_labels(e) for e in mine])
        findings += found
        selected = [(endpoint, share) for endpoint, share in zip(mine, shares) if share]
        if not selected:
            findings.append(Finding(service, ("spec", "endpoints"), "no endpoint to route to, so the service is not "
                                    "published on the fleet gateway until one of its selectors matches",
                                    "service-empty"))
            continue
        targets = service_targets(service, selected, addresses)
        leaf_weights = weights.integer_weights([target.shares for target in targets])
        fleet += [*(target.backend for target in targets),
                  fleet_route(service, targets, [sum(leaves) for leaves in leaf_weights])]
        for target, leaves in zip(targets, leaf_weights):
            if target.cluster:
                clusters.setdefault(target.cluster, []).append(cluster_route(service, target, leaves))
        findings += path_warnings(service, selected)
    return fleet, clusters, findings


def service_targets(service: ModelService, selected: list[tuple[Endpoint, Fraction]],
                    addresses: Mapping[str, str]) -> list[Target]:
    """The service's targets, sorted by Backend name then Host."""
    targets = [external_target(service, endpoint, share) for endpoint, share in selected
               if isinstance(endpoint, ModelEndpoint)]
    by_cluster: dict[str, list[tuple[ReplicaContext, Fraction]]] = {}
    for endpoint, share in selected:
        if isinstance(endpoint, ReplicaContext):
            by_cluster.setdefault(endpoint.cluster, []).append((endpoint, share))
    for cluster, replicas in by_cluster.items():
        targets += cluster_targets(service, cluster, replicas, addresses[cluster])
    return sorted(targets, key=lambda target: (target.backend["metadata"]["name"], target.host))


def external_target(service: ModelService, endpoint: ModelEndpoint, share: Fraction) -> Target:
    url = urlsplit(endpoint.spec.url)
    host, https = url.hostname or "", url.scheme == "https"
    backend = backend_object(names.name("external", endpoint.name), service.namespace, host,
                             url.port or (443 if https else 80), tls=https)
    return Target(backend, host, api_root(endpoint), (share,))


def cluster_targets(service: ModelService, cluster: str, replicas: list[tuple[ReplicaContext, Fraction]],
                    address: str) -> list[Target]:
    """The targets on one cluster: its selected replicas behind the service host, except that a
    PrefillDecode replica sharing the cluster with others gets a Host (and route) of its own."""
    backend = backend_object(names.name("gateway", cluster), service.namespace, address, GATEWAY_PORT)
    host = service_host(service.namespace, service.name)
    split = len(replicas) > 1
    groups = [(host, names.name(service.name, "service"),
               [(ctx, share) for ctx, share in replicas if not (split and ctx.prefill_decode)])]
    groups += [(f"{ctx.name}.{host}", names.name(service.name, "service", ctx.name), [(ctx, share)])
               for ctx, share in replicas if split and ctx.prefill_decode]
    targets = []
    for group_host, route, group in groups:
        refs, shares = leaves(group)
        if refs:
            targets.append(Target(backend, group_host, "/", shares, refs, cluster, route))
    return targets


def leaves(replicas: list[tuple[ReplicaContext, Fraction]]) -> tuple[tuple[dict, ...], tuple[Fraction, ...]]:
    """The backendRefs of the replicas' own routes, each replica's share split evenly across its refs."""
    refs: list[dict] = []
    shares: list[Fraction] = []
    for ctx, share in replicas:
        own = serving_refs(ctx)
        refs += own
        shares += [share / len(own)] * len(own)
    return tuple(refs), tuple(shares)


def api_root(endpoint: ModelEndpoint) -> str:
    """Where an external endpoint's OpenAI API is rooted: its rewritePath, else its URL's path, else `/`."""
    return endpoint.spec.rewrite_path or urlsplit(endpoint.spec.url).path or "/"


def fleet_route(service: ModelService, targets: list[Target], fleet_weights: list[int]) -> dict:
    """The service's HTTPRoute on the fleet Gateway: one path rewrite on the rule, Hosts as the module says."""
    paths = {target.path for target in targets}
    hosts = {target.host for target in targets}
    rewrite: dict = {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": paths.pop() if len(paths) == 1 else "/"}}
    refs = [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": target.backend["metadata"]["name"],
             "weight": weight} for target, weight in zip(targets, fleet_weights)]
    if len(hosts) == 1:
        rewrite["hostname"] = hosts.pop()
    else:
        refs = [{**ref, "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": target.host}}]}
                for ref, target in zip(refs, targets)]
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": serving.replica_path(service.namespace, service.name)}}],
            "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}],
            "backendRefs": refs, "timeouts": {"request": "0s"}}
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": service.name, "namespace": service.namespace, "labels": names.managed()},
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": FLEET_GATEWAY,
                                     "namespace": SYSTEM_NAMESPACE}],
                     "rules": [rule]}}


def cluster_route(service: ModelService, target: Target, leaf_weights: list[int]) -> dict:
    """The HTTPRoute on `target.cluster`'s inference Gateway that serves the service for `target.host`."""
    metadata = {"name": target.route, "namespace": service.namespace,
                "labels": {**names.managed(), names.SERVICE: service.name, names.CLUSTER: target.cluster}}
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
            "backendRefs": [{**ref, "weight": weight} for ref, weight in zip(target.refs, leaf_weights)]}
    return serving.inference_route(metadata, rule, [target.host])


def path_warnings(service: ModelService, selected: list[tuple[Endpoint, Fraction]]) -> list[Finding]:
    """A warning when external endpoints are rooted elsewhere than the path the fleet route rewrites to."""
    roots = {api_root(e) if isinstance(e, ModelEndpoint) else "/" for e, _ in selected}
    if len(roots) == 1:
        return []
    listed = ", ".join(f"{e.name} ({api_root(e)})" for e, _ in selected
                       if isinstance(e, ModelEndpoint) and api_root(e) != "/")
    return [Finding(service, ("spec", "endpoints"),
                    f"its endpoints are rooted at different paths, so the fleet route rewrites "
                    f"{serving.replica_path(service.namespace, service.name)} to / for every backend and requests "
                    f"reach {listed} without that path: Envoy Gateway cannot rewrite the path per backend "
                    "(envoyproxy/gateway#9095, #9131); point each such ModelEndpoint at a base URL whose API root "
                    "is / (url: https://host/ with rewritePath: /), or publish it through a ModelService of its own",
                    "per-backend-path-rewrite")]


def backend_object(name: str, namespace: str, host: str, port: int, tls: bool = False) -> dict:
    address = {"ip": {"address": host, "port": port}} if _is_ip(host) else {"fqdn": {"hostname": host, "port": port}}
    spec: dict = {"endpoints": [address]}
    if tls:
        spec["tls"] = {"wellKnownCACertificates": "System"}
    return {"apiVersion": _ENVOY_BACKEND, "kind": "Backend",
            "metadata": {"name": name, "namespace": namespace, "labels": names.managed()}, "spec": spec}


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
