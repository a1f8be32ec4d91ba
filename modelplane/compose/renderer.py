"""`render(manifests, placement)`: what every workload cluster and the fleet gateway must run.

Invariants (the contract the Pulumi layer and `plan --render` rely on):
- Pure and deterministic: no I/O, no clock, no environment; the same inputs, in any order, give
  equal `Rendered` values and byte-identical `files()`.
- Every fleet cluster has an entry in `clusters` and `addons` (possibly no manifests), or in
  `clusters` only those `render(..., clusters=...)` names: the other fields do not depend on it
  (the split layout's fleet stack applies no cluster's objects and renders none: at 5,000 replicas
  over 10 clusters that is 3.5-4.4 s of CPU its every run no longer pays); a fleet
  gateway on the control cluster (`api.CONTROL_CLUSTER`, the InferenceGateway without
  `spec.cluster`) adds that host's entry to `addons` only (`gateways.control_stack`): its objects
  are `gateway`, as on a workload cluster that hosts it, but without Namespaces (the control
  cluster's are the teams' and the control plane's, never the stack's).
- Every manifest has `apiVersion`, `kind`, `metadata.name` (and `metadata.namespace` when
  namespaced); `(cluster, apiVersion, kind, namespace, name)` is unique, the fleet gateway's
  objects counting as objects of the InferenceGateway's cluster.
- Manifests are sorted by kind in apply order (namespaces and RBAC before what uses them), then
  namespace, then name.
- Warnings are `Problem`s with severity warning, pointed at the user's file and line when known.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.api import CONTROL_CLUSTER, Manifests, Problem, ServingMode
from modelplane.cel import SelectorEvaluator
from modelplane.compose import cache, files, gateways, isolation, prefill_decode, routing, selectors, serving, stack, vendors
from modelplane.compose import secrets as compose_secrets
from modelplane.compose.findings import Finding, problem
from modelplane.compose.replica import ReplicaContext
from modelplane.compose.secrets import SecretKey
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon
from modelplane.compose.workloads import engine_objects
from modelplane.invariants import InvariantError, present
from modelplane.scheduling import Placement

KIND_ORDER = ("Namespace", "NetworkPolicy", "GatewayClass", "Certificate", "EnvoyProxy", "Gateway", "SecurityPolicy", "Secret", "ServiceAccount", "Role",
              "RoleBinding", "ConfigMap", "PersistentVolumeClaim", "Job", "ResourceClaimTemplate", "Deployment",
              "LeaderWorkerSet", "PodCliqueSet", "Service", "EndpointSlice", "BackendTLSPolicy", "InferencePool", "Backend", "HTTPRoute")


@dataclass(frozen=True)
class Rendered:
    clusters: Mapping[str, tuple[dict, ...]]
    """Workload-cluster name -> the manifests to apply there, sorted."""
    gateway: tuple[dict, ...]
    """The fleet gateway's objects, applied on the InferenceGateway's cluster (empty without one)."""
    addons: Mapping[str, tuple[Addon, ...]]
    """Cluster name -> its serving stack, in install order (and `CONTROL_CLUSTER` -> the control
    cluster's, when the fleet gateway runs there)."""
    endpoints: tuple[dict, ...]
    """The ModelEndpoint of every placed replica (name, labels, url, rewritePath)."""
    warnings: tuple[Problem, ...]

    def files(self) -> dict[str, str]:
        """Relative path -> YAML text, sorted by path (see `compose.files` for the layout)."""
        out: dict[str, str] = {}
        for cluster, manifests in self.clusters.items():
            out.update(files.object_files(cluster, manifests))
        for cluster, addons in self.addons.items():
            out[f"{files.INVENTORY_DIR}/stacks/{cluster}.yaml"] = files.dump_all(addon.to_dict() for addon in addons)
        if self.gateway:
            out.update(files.object_files(files.GATEWAY_DIR, self.gateway))
        if self.endpoints:
            out[f"{files.INVENTORY_DIR}/endpoints.yaml"] = files.dump_all(self.endpoints)
        return dict(sorted(out.items()))


def render(manifests: Manifests, placement: Placement, settings: Settings = Settings(),
           gateway_addresses: Mapping[str, str] | None = None, secrets: Collection[SecretKey] = (), *,
           clusters: Collection[str] | None = None) -> Rendered:
    """`secrets`: the Secret keys stack config holds values for (`compose.secrets`); `clusters`: the
    workload clusters whose objects `Rendered.clusters` holds (every fleet cluster by default)."""
    every = frozenset(cluster.name for cluster in manifests.fleet.clusters)
    return _render(manifests, placement, settings, gateway_addresses or {}, frozenset(secrets),
                   every if clusters is None else frozenset(clusters))


def _render(manifests: Manifests, placement: Placement, settings: Settings, given: Mapping[str, str],
            secrets: frozenset[SecretKey], wanted: frozenset[str]) -> Rendered:
    fleet = manifests.fleet
    contexts = replica_contexts(manifests, placement, settings)
    # The fleet gateway leaves out the Namespaces its cluster already holds, so that cluster is rendered too.
    built = wanted | ({fleet.gateway.host} if fleet.gateway is not None else set())
    objects: dict[str, list[dict]] = {cluster.name: [] for cluster in fleet.clusters}
    replica_objects([ctx for ctx in contexts if ctx.cluster in built], objects)
    cache_objects(manifests, settings, objects, built)
    for cluster in fleet.clusters:
        if cluster.name not in built:
            continue
        running = {ctx.deployment.key: ctx.deployment for ctx in contexts if ctx.cluster == cluster.name}
        objects[cluster.name] += compose_secrets.secret_objects(cluster.name, list(running.values()),
                                                                manifests.workloads, secrets)
    addresses = {cluster.name: given.get(cluster.name) or routing.address_placeholder(cluster.name)
                 for cluster in fleet.clusters}
    endpoints = [routing.endpoint_view(ctx, addresses[ctx.cluster], fleet.gateway) for ctx in contexts]
    gateway, found = fleet_gateway(manifests, contexts, addresses, objects)
    addons = {cluster.name: gateways.cluster_stack(cluster, settings, fleet.gateway, stack.class_drivers(fleet, cluster))
              for cluster in fleet.clusters}
    if fleet.gateway is not None and fleet.gateway.host == CONTROL_CLUSTER:
        addons[CONTROL_CLUSTER] = gateways.control_stack(settings, fleet.gateway)
    return Rendered(
        clusters={name: unique_sorted(manifests_of) for name, manifests_of in objects.items() if name in wanted},
        gateway=unique_sorted(gateway),
        addons=addons,
        endpoints=tuple(endpoints),
        warnings=tuple(sorted(problem(manifests, finding)
                              for finding in (*manifest_findings(manifests, settings, secrets), *found))))


def replica_objects(contexts: list[ReplicaContext], objects: dict[str, list[dict]]) -> None:
    """Add each replica's namespace, workloads and serving objects to its cluster's list."""
    for ctx in contexts:
        objects[ctx.cluster] += [stack.namespace(ctx.namespace), isolation.engine_policy(ctx.namespace)]
        for engine in ctx.deployment.spec.engines:
            objects[ctx.cluster] += engine_objects(ctx, engine)
        objects[ctx.cluster] += (prefill_decode.routing_objects(ctx) if ctx.prefill_decode
                                 else serving.unified_objects(ctx))


def manifest_findings(manifests: Manifests, settings: Settings, secrets: Collection[SecretKey],
                      evaluator: SelectorEvaluator | None = None) -> list[Finding]:
    """The warnings that do not depend on the placement: every prefill/decode deployment's (placed or
    not), where ModelCache volumes have no ReadWriteMany class, selectors no published device
    satisfies (evaluated with `evaluator`, the plan's if given), selectors that read one GPU vendor's
    domain where the other vendor's classes are (`vendors`), Secrets engines read that the stack
    does not create, what the fleet gateway leaves open."""
    pairs = [d for d in manifests.workloads.deployments if d.spec.serving.mode is ServingMode.PREFILL_DECODE]
    return [*(Finding(deployment, loc, message, code) for deployment in pairs
              for loc, message, code in prefill_decode.warnings(deployment)),
            *cache.storage_findings(manifests, settings), *selectors.unsatisfiable(manifests, evaluator),
            *vendors.cross_vendor(manifests),
            *compose_secrets.findings(manifests.workloads, secrets), *gateways.security_warnings(manifests.fleet.gateway,
                                                                             manifests.fleet.clusters)]


def cache_objects(manifests: Manifests, settings: Settings, objects: dict[str, list[dict]],
                  built: Collection[str]) -> None:
    """Add each ModelCache's staging objects to the clusters it is staged on, of those `built`."""
    fleet, work = manifests.fleet, manifests.workloads
    for model_cache, staged in cache.staging(fleet, work):
        for name in staged:
            if name not in built:
                continue
            cluster = present(fleet.cluster(name), f"ModelCache {model_cache.namespace}/{model_cache.name} is staged "
                                                    f"on {name}, a fleet cluster")
            objects[name] += [stack.namespace(model_cache.namespace), *cache.cache_objects(model_cache, cluster, settings)]


def plan_warnings(manifests: Manifests, placement: Placement | None = None, settings: Settings = Settings(),
                  secrets: Collection[SecretKey] = (), *, evaluator: SelectorEvaluator | None = None
                  ) -> tuple[Problem, ...]:
    """The warnings `render` gives, without rendering the workloads: with a placement, exactly
    `render(...).warnings` (`modelplane plan` prints the same whether or not it renders); without one
    (`modelplane validate`), only those that do not depend on it. `evaluator`: the one the placement
    was made with, whose evaluations the selector warnings reuse."""
    findings = manifest_findings(manifests, settings, secrets, evaluator)
    if placement is not None:
        contexts = replica_contexts(manifests, placement, settings)
        addresses = {c.name: routing.address_placeholder(c.name) for c in manifests.fleet.clusters}
        findings += fleet_gateway(manifests, contexts, addresses, {c.name: [] for c in manifests.fleet.clusters})[1]
    return tuple(sorted(problem(manifests, finding) for finding in findings))


def fleet_gateway(manifests: Manifests, contexts: list[ReplicaContext], addresses: Mapping[str, str],
                  objects: dict[str, list[dict]]) -> tuple[list[dict], list[Finding]]:
    """The fleet gateway's objects (with the namespaces its cluster lacks; on the control cluster none,
    since the ModelServices' namespaces are there and a stack must never delete them), each service's
    routes on the workload clusters (added to `objects`), or a warning per service when there is no
    fleet gateway."""
    fleet, work = manifests.fleet, manifests.workloads
    if fleet.gateway is None:
        return [], [Finding(service, ("spec",), "no InferenceGateway is declared, so this service is not published "
                            "on a fleet gateway; declare one to expose it", "no-fleet-gateway")
                    for service in work.services]
    gateway, routes, findings = routing.fleet_objects(fleet.gateway, work.services, [*contexts, *work.endpoints],
                                                      addresses, work.deployments)
    for cluster, cluster_routes in routes.items():
        objects[cluster] += cluster_routes
    if fleet.gateway.host == CONTROL_CLUSTER:  # the ModelServices live there: their namespaces are the teams'
        return gateway, findings
    namespaces = sorted({obj["metadata"]["namespace"] for obj in gateway}
                        - {stack.SYSTEM_NAMESPACE, stack.ENVOY_GATEWAY_NAMESPACE})  # the chart's, not ours
    hosted = {key(obj) for obj in objects[fleet.gateway.host]}
    return [*gateway, *(ns for ns in map(stack.namespace, namespaces) if key(ns) not in hosted)], findings


def replica_contexts(manifests: Manifests, placement: Placement, settings: Settings) -> list[ReplicaContext]:
    """A context per placed replica, sorted by (deployment, cluster, index)."""
    work = manifests.workloads
    contexts = []
    for replica in sorted(placement.replicas, key=lambda r: r.slot):
        deployment, cluster = work.deployment(replica.deployment), manifests.fleet.cluster(replica.cluster)
        if deployment is None or cluster is None:
            raise InvariantError(f"the placement names {replica.deployment} on {replica.cluster}, which the "
                                 "manifests do not declare")
        contexts.append(ReplicaContext(deployment, replica, work.cache_of(deployment), settings, cluster.spec.stack))
    return contexts


def key(manifest: dict) -> tuple[str, str, str, str]:
    metadata = manifest["metadata"]
    return manifest["apiVersion"], manifest["kind"], metadata.get("namespace", ""), metadata["name"]


def unique_sorted(manifests: Iterable[dict]) -> tuple[dict, ...]:
    """One copy of each object (repeats, like a shared Namespace, must be identical), in apply order.

    Each is a copy, so no two returned manifests share a nested dict or list.
    """
    seen: dict[tuple[str, str, str, str], dict] = {}
    for manifest in manifests:
        identity = key(manifest)
        first = seen.get(identity)
        if first is None:
            seen[identity] = _copy(manifest)
        elif first != manifest:
            raise InvariantError(f"two different manifests are named {identity}")
    return tuple(sorted(seen.values(), key=lambda m: (KIND_ORDER.index(m["kind"]), key(m)[2], key(m)[3], key(m)[0])))


def _copy(value: Any) -> Any:
    """A deep copy of plain manifest data (dicts, lists, scalars); several times faster than
    `copy.deepcopy`, which a fleet's worth of manifests makes the bulk of a render."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
