"""Rules across objects: references resolve, identities are unique, one gateway per fleet.

Each rule is a function over the validated objects (with where they were written) that yields
problems; `check_references` runs them in a fixed order. A reference to an object that was declared
but is invalid is not reported: that object's own problems are. Warnings that need the whole set (a gang
without a cache) live here too, since they read the same references.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from modelplane.api.base import ClusterSource, Provider
from modelplane.api.collisions import rendered_name_collisions
from modelplane.api.fleet import InferenceClass, InferenceCluster
from modelplane.api.gateway import UPSTREAM_NAME, InferenceGateway
from modelplane.api.manifests import Manifest, ObjectKey, Origin, object_key
from modelplane.api.problems import Problem, Severity
from modelplane.api.workload import ModelCache, ModelDeployment, ModelEndpoint

Located = tuple[Manifest, Origin]
ZONELESS = (ClusterSource.NEBIUS, ClusterSource.VULTR)


def check_references(objects: Sequence[Located], declared: set[ObjectKey], control_cluster: bool = False
                     ) -> Iterator[Problem]:
    """`control_cluster`: whether the fleet has a control cluster to run a gateway without `spec.cluster`."""
    yield from duplicate_objects(objects)
    yield from pool_classes(objects, declared)
    yield from zoneless_pools(objects)
    yield from cache_references(objects, declared)
    yield from gateways(objects, declared, control_cluster)
    yield from unauthenticated_cluster_gateways(objects, declared)
    yield from gangs_without_cache(objects)
    yield from endpoint_loops(objects)
    yield from rendered_name_collisions(objects)


def duplicate_objects(objects: Sequence[Located]) -> Iterator[Problem]:
    """`kind/namespace/name` is an identity: a second object with it is an error at the second."""
    first: dict[ObjectKey, Origin] = {}
    for obj, origin in objects:
        key = object_key(obj)
        if key in first:
            seen = first[key]
            yield origin.problem(key, ("metadata", "name"), f"duplicate {obj.kind} {obj.name!r}: already defined at "
                                 f"{seen.file}:{seen.line}; names are unique per kind and namespace", "duplicate")
        else:
            first[key] = origin


def pool_classes(objects: Sequence[Located], declared: set[ObjectKey]) -> Iterator[Problem]:
    """Every nodePool's className names an InferenceClass; a provisioned cluster's pool's class says
    how to provision it on that cloud."""
    classes = {obj.name: obj for obj, _ in objects if isinstance(obj, InferenceClass)}
    providers = {source: Provider(source) for source in ClusterSource if source is not ClusterSource.EXISTING}
    for obj, origin in objects:
        if not isinstance(obj, InferenceCluster):
            continue
        for index, pool in enumerate(obj.spec.node_pools):
            loc = ("spec", "nodePools", index, "className")
            cls = classes.get(pool.class_name)
            if cls is None and ("InferenceClass", "", pool.class_name) in declared:
                continue
            if cls is None:
                known = ", ".join(sorted(classes)) or "none are defined"
                yield origin.problem(object_key(obj), loc, f"InferenceClass {pool.class_name!r} is not defined "
                                     f"(defined: {known})", "reference")
                continue
            provider = providers.get(obj.spec.cluster.source)
            provisioning = cls.spec.provisioning
            if provider is not None and (provisioning is None or provisioning.provider is not provider):
                yield origin.problem(object_key(obj), loc,
                                     f"InferenceClass {cls.name!r} has no provisioning for {provider}: a "
                                     f"{provider} cluster creates its pools from the class's "
                                     f"spec.provisioning.{provider.lower()} (machine shape and accelerator)",
                                     "reference")


def zoneless_pools(objects: Sequence[Located]) -> Iterator[Problem]:
    """Warn: Nebius and Vultr have no zones to pin a pool to (a Nebius project is one region), so a
    pool's `zones` there are not used."""
    for obj, origin in objects:
        if not isinstance(obj, InferenceCluster) or obj.spec.cluster.source not in ZONELESS:
            continue
        for index, pool in enumerate(obj.spec.node_pools):
            if pool.zones:
                yield origin.problem(object_key(obj), ("spec", "nodePools", index, "zones"),
                                     f"{obj.spec.cluster.source} pools have no zones; these are not used",
                                     "zones-not-used", severity=Severity.WARNING)


def cache_references(objects: Sequence[Located], declared: set[ObjectKey]) -> Iterator[Problem]:
    """`modelCacheRef` names a ModelCache in the deployment's namespace."""
    caches = {(obj.namespace, obj.name) for obj, _ in objects if isinstance(obj, ModelCache)}
    for obj, origin in objects:
        if isinstance(obj, ModelDeployment) and obj.spec.model_cache_ref is not None:
            ref = obj.spec.model_cache_ref.name
            if (obj.namespace, ref) not in caches and ("ModelCache", obj.namespace, ref) not in declared:
                in_ns = sorted(name for ns, name in caches if ns == obj.namespace)
                known = ", ".join(in_ns) or "none"
                yield origin.problem(object_key(obj), ("spec", "modelCacheRef", "name"),
                                     f"ModelCache {ref!r} is not defined in namespace {obj.namespace!r} "
                                     f"(defined there: {known})", "reference")


def gateways(objects: Sequence[Located], declared: set[ObjectKey], control_cluster: bool = False) -> Iterator[Problem]:
    """At most one InferenceGateway per fleet, hosted on a defined InferenceCluster or on the control cluster.

    Without `spec.cluster` (the Crossplane-based Modelplane's form) the gateway runs on the control
    cluster: fine when `control_cluster` says one exists, else an error at `spec.cluster`; either
    way a warning when such a gateway is not named `default`, the one name upstream accepts.
    """
    clusters = {obj.name for obj, _ in objects if isinstance(obj, InferenceCluster)}
    found = [(obj, origin) for obj, origin in objects if isinstance(obj, InferenceGateway)]
    for obj, origin in found[1:]:
        first = found[0][1]
        yield origin.problem(object_key(obj), ("metadata", "name"),
                             f"a fleet has one InferenceGateway; {found[0][0].name!r} is already defined at "
                             f"{first.file}:{first.line}", "duplicate")
    for obj, origin in found:
        known = ", ".join(sorted(clusters)) or "none are defined"
        if obj.spec.cluster is None:
            if not control_cluster:
                yield origin.problem(object_key(obj), ("spec", "cluster"),
                                     "spec.cluster is required without a control cluster: a gateway without it runs "
                                     "on the control cluster; set it to the InferenceCluster that hosts the fleet "
                                     f"gateway (defined: {known}), or run in control-cluster mode (stack config "
                                     "modelplane:source: cluster)", "control-cluster")
            if obj.name != UPSTREAM_NAME:
                yield origin.problem(object_key(obj), ("metadata", "name"),
                                     f"the Crossplane-based Modelplane accepts one InferenceGateway, named "
                                     f"{UPSTREAM_NAME!r} (its ModelServices look the gateway up by that name); "
                                     f"name it {UPSTREAM_NAME} to keep these manifests portable", "gateway-name",
                                     severity=Severity.WARNING)
        elif obj.spec.cluster not in clusters and ("InferenceCluster", "", obj.spec.cluster) not in declared:
            yield origin.problem(object_key(obj), ("spec", "cluster"),
                                 f"InferenceCluster {obj.spec.cluster!r} is not defined (defined: {known})",
                                 "reference")


def unauthenticated_cluster_gateways(objects: Sequence[Located], declared: set[ObjectKey]) -> Iterator[Problem]:
    """Every cluster's inference Gateway (reachable at its external address: the fleet gateway dials it, and
    without an InferenceGateway callers reach it directly) authenticates its callers, or its InferenceCluster
    says `spec.gateway.publicInference: true` (compose warns: `gateways.security_warnings`). Authenticated
    means: with an InferenceGateway, the fleet gateway's client certificate (`clusterTLS.clientCertificateSecret`) is
    required there; without one, the cluster's own API keys (`spec.gateway.auth`). Anything else is an error: a
    plain-HTTP fleet (no hop to authenticate) must open its clusters explicitly, and `auth` on a cluster behind an
    InferenceGateway is refused (the fleet gateway removes the caller's key before the hop, so every request would
    be refused). Nothing is said while a declared
    InferenceGateway is itself refused: which rule applies depends on it."""
    gateway = next((obj for obj, _ in objects if isinstance(obj, InferenceGateway)), None)
    if gateway is None and any(kind == "InferenceGateway" for kind, _, _ in declared):
        return
    hop = gateway.spec.cluster_tls if gateway else None
    mutual = hop is not None and hop.client_certificate_secret is not None
    for obj, origin in objects:
        if not isinstance(obj, InferenceCluster):
            continue
        keys = obj.spec.gateway.auth if obj.spec.gateway else None
        if obj.spec.public_inference:
            continue
        if gateway is not None and keys is not None:
            yield origin.problem(object_key(obj), ("spec", "gateway", "auth"), "API keys on a cluster's gateway are for "
                                 f"fleets without an InferenceGateway: InferenceGateway {gateway.name} authenticates "
                                 "the hop to this cluster with its client certificate "
                                 "(clusterTLS.clientCertificateSecret); remove auth", "cluster-auth-behind-gateway")
        elif gateway is None and keys is None:
            yield origin.problem(object_key(obj), ("spec", "gateway"), "the cluster's inference Gateway would accept "
                                 "every caller unauthenticated: set spec.gateway.auth.apiKeysSecret (callers send "
                                 "an API key), or say spec.gateway.publicInference: true to open it on purpose",
                                 "unauthenticated-cluster-gateway")
        elif gateway is not None and not mutual:
            yield origin.problem(object_key(obj), ("spec", "gateway", "publicInference"), "the cluster's inference "
                                 f"Gateway would accept every caller unauthenticated: {_hop_fix(gateway)}, or say "
                                 "spec.gateway.publicInference: true to open it on purpose",
                                 "unauthenticated-cluster-gateway")


def _hop_fix(gateway: InferenceGateway) -> str:
    """How InferenceGateway `gateway` could authenticate its hop to the clusters, in an error's words."""
    if gateway.spec.plain_http:
        return (f"InferenceGateway {gateway.name} reaches the clusters over plain HTTP (plainHTTP: true), where no "
                "client certificate can be presented; set tls and clusterTLS with clusterTLS.clientCertificateSecret")
    return (f"set clusterTLS.clientCertificateSecret (and caCertificates) on InferenceGateway {gateway.name}, so that "
            "the fleet gateway presents a client certificate the cluster's gateway requires")


def endpoint_loops(objects: Sequence[Located]) -> Iterator[Problem]:
    """A ModelEndpoint never points at the fleet gateway itself (its hostname or observed address):
    each request would come back through the gateway, and again."""
    names = {value.lower() for obj, _ in objects if isinstance(obj, InferenceGateway)
             for value in (obj.spec.hostname, obj.status.address if obj.status else None) if value}
    for obj, origin in objects:
        if isinstance(obj, ModelEndpoint) and (urlsplit(obj.spec.url).hostname or "") in names:
            yield origin.problem(object_key(obj), ("spec", "url"), (
                f"{urlsplit(obj.spec.url).hostname} is the fleet gateway itself: requests would loop through it; "
                "route to the ModelService or ModelDeployment instead"), "endpoint-loop")


def gangs_without_cache(objects: Sequence[Located]) -> Iterator[Problem]:
    """Warn: a multi-node engine without a cache makes every pod of the gang download the weights.

    Seed 000 calls the cache required for gangs, the docs call it recommended; we warn.
    """
    for obj, origin in objects:
        if not isinstance(obj, ModelDeployment) or obj.spec.model_cache_ref is not None:
            continue
        for index, engine in enumerate(obj.spec.engines):
            if engine.multi_node:
                yield origin.problem(object_key(obj), ("spec", "engines", index),
                                     f"engine {engine.name!r} spans several nodes but the deployment has no "
                                     "spec.modelCacheRef: every pod of the gang will download the weights "
                                     "itself; add a ModelCache and reference it", "gang-without-cache",
                                     severity=Severity.WARNING)
