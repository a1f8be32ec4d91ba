"""Fleet routing: a ModelEndpoint per placed replica, and each ModelService as two levels of routes.

Invariants:
- Each placed replica has a ModelEndpoint (same shape as a user's) named after the replica, with
  the deployment's labels plus `modelplane.ai/deployment|cluster|replica-index`, URL
  `http[s]://<cluster gateway address>/<namespace>/<replica>/` (https with the InferenceGateway's
  `clusterTLS`) and rewritePath `/<namespace>/<replica>/`
  (its own route on its cluster, `serving.replica_route`). A cluster whose address is not given gets
  `address_placeholder(cluster)` in exactly the leaf strings that hold it: inside the endpoint's
  `url`, and as the address of the fleet gateway's objects that reach the cluster
  (`gateways.bind_addresses` puts the address there).
- Which endpoints a service selects, and their shares, follow the ModelService rule (`weights`).
- Fleet level (with an InferenceGateway): per service, one HTTPRoute on the fleet Gateway matching
  `/<namespace>/<service>/`, rewritten per target (`Destination`) to its path and Host, with the
  target's weight. The targets are each workload cluster that runs a selected replica, through its
  gateway's address, and each selected external endpoint. The objects are the backend's
  (`compose.gateways`: Envoy Gateway or Traefik); this module decides only what they carry.
- The hop to a cluster is plain HTTP on port 80 only with `plainHTTP`; with `clusterTLS` it is TLS
  on 443, the cluster's gateway checked as `<cluster>.<clusterTLS.domain>` (`gateways.tls`).
- A cluster target's path is `/`, so `/<ns>/<service>/v1/chat/completions` arrives as
  `/v1/chat/completions`; an external target's path is its API root (rewritePath, else its URL's
  path). A backend that cannot rewrite the path per backendRef (Envoy Gateway) rewrites to `/` for
  every target when they differ, and the service gets a `per-backend-path-rewrite` warning.
- The Host header says which service a cluster is asked for: a cluster target gets
  `service_host(namespace, service)`, an internal name that is only ever a Host header (no DNS
  record exists or is needed); an external target gets its URL's host.
- Cluster level: for each cluster target, one HTTPRoute on that cluster's inference Gateway with
  `hostnames: [<its Host>]` and PathPrefix `/v1/` (only the OpenAI API, `serving.OPENAI_PREFIX`: an
  engine's `/metrics` or `/tokenize` is never reachable through the fleet), whose backendRefs are exactly what each local
  selected replica's own route points at (its Unified Services, or its InferencePool), weighted so
  that every replica's end-to-end share is its share under the ModelService rule.
- One rule may reference one InferencePool and nothing else, so a PrefillDecode replica that shares
  its cluster with other selected replicas is a target of its own, with Host
  `<replica>.<service host>` and its own cluster route; the fleet route then reaches that cluster's
  gateway once per Host.
- The cluster routes disable the request timeout, so long token streams are never cut.

Why two levels, whichever the fleet backend: each cluster's own gateway (Envoy Gateway) splits the
service's share of that cluster across its local replicas, by Host, so the fleet route needs one
backendRef per cluster and no per-replica path, and reads the same on a backend that cannot rewrite
the path per backendRef (`gateways.envoy`). Envoy AI Gateway (the InferencePool extension)
configures one endpoint picker per rule and makes that rule's cluster an original-destination
cluster: "at most one inferencepool can be referenced per route rule"
(envoyproxy/ai-gateway internal/extensionserver/post_cluster_modify.go).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from urllib.parse import urlsplit

from modelplane.api import API_VERSION, InferenceGateway, ModelDeployment, ModelEndpoint, ModelService
from modelplane.compose import gateways, idle, names, prefill_decode, serving, weights
from modelplane.api.guards import ADDRESS_SUFFIX
from modelplane.compose.findings import Finding
from modelplane.compose.gateways import TLS, Destination
from modelplane.compose.replica import ReplicaContext

SERVICE_DOMAIN = "modelplane.internal"
"""Parent of every service host: `.internal` is reserved for private use and never resolves publicly."""

Endpoint = ReplicaContext | ModelEndpoint
"""A ModelEndpoint a service can select: a placed replica's, or a user's external one."""


def address_placeholder(cluster: str) -> str:
    """Stands for a workload cluster's gateway address until the cluster exists. It is a valid DNS
    name, so objects holding it still validate; the Pulumi layer binds the real address (an Output)
    wherever this string appears (`gateways.bind_addresses`), whole or inside a URL."""
    return f"{cluster}{ADDRESS_SUFFIX}"


def service_host(namespace: str, service: str) -> str:
    """The Host header by which a workload cluster's gateway knows a ModelService."""
    return f"{service}.{namespace}.{SERVICE_DOMAIN}"


def endpoint_view(ctx: ReplicaContext, address: str, gateway: InferenceGateway | None) -> dict:
    """The ModelEndpoint of one placed replica: `https` on its cluster's gateway with `clusterTLS`."""
    path = serving.replica_path(ctx.namespace, ctx.name)
    scheme = "https" if gateways.tls.cluster_tls(gateway, ctx.cluster) else "http"
    return {"apiVersion": API_VERSION, "kind": "ModelEndpoint",
            "metadata": {"name": ctx.name, "namespace": ctx.namespace, "labels": endpoint_labels(ctx)},
            "spec": {"url": f"{scheme}://{address}{path}", "rewritePath": path}}


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

    destination: Destination
    """Where the fleet gateway sends it: address, Host, path (`/` on a cluster; an external
    endpoint's API root)."""
    shares: tuple[Fraction, ...]
    """The shares of its leaves: the backendRefs in `refs`, or the external endpoint alone."""
    refs: tuple[dict, ...] = ()
    """The backendRefs of its route on `cluster` (none for an external endpoint)."""
    cluster: str = ""
    """The workload cluster whose gateway serves `host`; empty for an external endpoint."""
    route: str = ""
    """The name of its HTTPRoute on `cluster`."""


def fleet_objects(gateway: InferenceGateway, services: Sequence[ModelService], endpoints: Sequence[Endpoint],
                  addresses: Mapping[str, str], deployments: Sequence[ModelDeployment] = ()
                  ) -> tuple[list[dict], dict[str, list[dict]], list[Finding]]:
    """The fleet Gateway with each service's objects (the gateway backend's); each cluster's service
    routes; warnings.

    `addresses` holds every cluster's gateway address (or its placeholder); `deployments` are read
    only for those scaled to zero (`idle`), whose services keep their route.
    """
    backend = gateways.backend(gateway)
    fleet = gateways.gateway_objects(gateway, [s.namespace for s in services])
    clusters: dict[str, list[dict]] = {}
    findings: list[Finding] = []
    for service in services:
        mine = [e for e in endpoints if e.namespace == service.namespace]
        shares, found = weights.endpoint_shares(service, [endpoint_labels(e) for e in mine])
        at_zero = idle.idle_matches(service, deployments)
        findings += [f for f in found if not any(idle_selected(service, f, d) for d in at_zero)]
        selected = [(endpoint, share) for endpoint, share in zip(mine, shares) if share]
        if not selected and at_zero:
            fleet += idle.idle_objects(service, at_zero)
            continue
        if not selected:
            findings.append(Finding(service, ("spec", "endpoints"), "no endpoint to route to, so the service is not "
                                    "published on the fleet gateway until one of its selectors matches",
                                    "service-empty"))
            continue
        targets = service_targets(gateway, service, selected, addresses)
        leaf_weights = weights.integer_weights([target.shares for target in targets])
        destinations, hop = gateways.hop.service_destinations(gateway, service, [t.destination for t in targets])
        fleet += [*hop, *backend.service_objects(service, destinations, [sum(leaves) for leaves in leaf_weights])]
        for target, leaves in zip(targets, leaf_weights):
            if target.cluster:
                clusters.setdefault(target.cluster, []).append(cluster_route(service, target, leaves))
        if not backend.PER_BACKEND_PATH:
            findings += path_warnings(service, selected)
    return fleet, clusters, findings


def idle_selected(service: ModelService, finding: Finding, deployment: ModelDeployment) -> bool:
    """Whether a group's "selects nothing" warning is answered by a deployment scaled to zero."""
    group = service.spec.endpoints[finding.loc[2]]
    return group.selector.matches(idle.idle_labels(deployment))


def service_targets(gateway: InferenceGateway, service: ModelService, selected: list[tuple[Endpoint, Fraction]],
                    addresses: Mapping[str, str]) -> list[Target]:
    """The service's targets, sorted by what they reach then Host."""
    targets = [external_target(endpoint, share) for endpoint, share in selected
               if isinstance(endpoint, ModelEndpoint)]
    by_cluster: dict[str, list[tuple[ReplicaContext, Fraction]]] = {}
    for endpoint, share in selected:
        if isinstance(endpoint, ReplicaContext):
            by_cluster.setdefault(endpoint.cluster, []).append((endpoint, share))
    for cluster, replicas in by_cluster.items():
        tls = gateways.tls.cluster_tls(gateway, cluster)
        targets += cluster_targets(service, cluster, replicas, addresses[cluster], tls)
    return sorted(targets, key=lambda target: (target.destination.backend, target.destination.host))


def external_target(endpoint: ModelEndpoint, share: Fraction) -> Target:
    url = urlsplit(endpoint.spec.url)
    host, https = url.hostname or "", url.scheme == "https"
    name = names.name("external", endpoint.name)
    return Target(Destination(name, name, host, url.port or (443 if https else 80), TLS(host) if https else None, host,
                              api_root(endpoint)), (share,))


def cluster_targets(service: ModelService, cluster: str, replicas: list[tuple[ReplicaContext, Fraction]],
                    address: str, tls: TLS | None) -> list[Target]:
    """The targets on one cluster: its selected replicas behind the service host, except that a
    PrefillDecode replica sharing the cluster with others gets a Host (and route) of its own; over
    `tls` (`clusterTLS`) on the cluster's HTTPS port."""
    backend = names.name("gateway", cluster)
    host = service_host(service.namespace, service.name)
    split = len(replicas) > 1
    groups = [(backend, host, names.name(service.name, "service"),
               [(ctx, share) for ctx, share in replicas if not (split and ctx.prefill_decode)])]
    groups += [(names.name(backend, ctx.name), f"{ctx.name}.{host}", names.name(service.name, "service", ctx.name),
                [(ctx, share)]) for ctx, share in replicas if split and ctx.prefill_decode]
    targets = []
    for name, group_host, route, group in groups:
        refs, shares = leaves(group)
        if refs:
            destination = Destination(name, backend, address, gateways.tls.cluster_port(tls), tls, group_host, "/",
                                      cluster)
            targets.append(Target(destination, shares, refs, cluster, route))
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


def cluster_route(service: ModelService, target: Target, leaf_weights: list[int]) -> dict:
    """The HTTPRoute on `target.cluster`'s inference Gateway that serves the service for its Host."""
    metadata = {"name": target.route, "namespace": service.namespace,
                "labels": {**names.managed(), names.SERVICE: service.name, names.CLUSTER: target.cluster}}
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": serving.OPENAI_PREFIX}}],
            "backendRefs": [{**ref, "weight": weight} for ref, weight in zip(target.refs, leaf_weights)]}
    return serving.inference_route(metadata, rule, [target.destination.host])


def path_warnings(service: ModelService, selected: list[tuple[Endpoint, Fraction]]) -> list[Finding]:
    """A warning, for a backend that rewrites one path for the whole rule, when external endpoints are
    rooted elsewhere than the path the fleet route rewrites to."""
    roots = {api_root(e) if isinstance(e, ModelEndpoint) else "/" for e, _ in selected}
    if len(roots) == 1:
        return []
    listed = ", ".join(f"{e.name} ({api_root(e)})" for e, _ in selected
                       if isinstance(e, ModelEndpoint) and api_root(e) != "/")
    return [Finding(service, ("spec", "endpoints"),
                    f"its endpoints are rooted at different paths, so the fleet route rewrites "
                    f"{serving.replica_path(service.namespace, service.name)} to / for every backend and requests "
                    f"reach {listed} without that path: Envoy Gateway cannot rewrite the path per backend "
                    "(envoyproxy/gateway#7099, #9095); set backend: Traefik on the InferenceGateway, which does, or "
                    "point each such ModelEndpoint at a base URL whose API root is / (url: https://host/ with "
                    "rewritePath: /), or publish it through a ModelService of its own",
                    "per-backend-path-rewrite")]
