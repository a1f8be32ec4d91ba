"""Scale to zero: what a ModelService keeps on the fleet gateway while its deployments have no replica.

A ModelDeployment with `spec.replicas: 0` (KEDA's `minReplicaCount: 0`, `kubectl scale --replicas=0`)
has no replica, so no ModelEndpoint; its ModelCache stays staged (`compose.cache` stages a cache for
every deployment that references it, placed or not) and scaling up places as usual.

Invariants:
- A deployment is *idle* when its `spec.replicas` is 0. A service group's selector matches an idle
  deployment by the labels its replicas would carry: the deployment's own labels plus
  `modelplane.ai/deployment: <name>` (per-replica keys such as the cluster are unknown at zero).
- A service that selects no endpoint but matches an idle deployment keeps its route `/<ns>/<service>/`
  on the fleet Gateway: an HTTPRoute (same name as when serving, so scaling up updates it in place)
  to a Service without a selector and without endpoints, `<service>-scaled-to-zero`. Gateway API
  says an implementation SHOULD answer 503 for a Service with no ready endpoints; Envoy Gateway
  answers 500 with no body (envoyproxy/gateway#6068, #8288). Either way the client gets a 5xx from
  the gateway rather than a 404, and the Service's annotation says why to whoever looks.
- Only Gateway API core kinds are emitted, so both fleet gateway backends take the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.api import ModelDeployment, ModelService
from modelplane.compose import names
from modelplane.compose.serving import replica_path
from modelplane.compose.stack import FLEET_GATEWAY, SYSTEM_NAMESPACE

REASON = "modelplane.ai/scaled-to-zero"
"""Annotation on the placeholder Service: which deployments are at zero and what a request gets."""


def idle_labels(deployment: ModelDeployment) -> dict[str, str]:
    """The labels a replica of `deployment` would carry that a selector can know before placement."""
    return {**deployment.metadata.labels, names.DEPLOYMENT: deployment.name}


def idle_matches(service: ModelService, deployments: Sequence[ModelDeployment]) -> list[ModelDeployment]:
    """The deployments at zero replicas, in the service's namespace, that one of its groups selects."""
    return [d for d in deployments if d.namespace == service.namespace and d.spec.replicas == 0
            and any(group.selector.matches(idle_labels(d)) for group in service.spec.endpoints)]


def idle_objects(service: ModelService, idle: Sequence[ModelDeployment]) -> list[dict]:
    """The Service without endpoints and the fleet HTTPRoute that keeps the service's path routed to it."""
    name = names.name(service.name, "scaled-to-zero")
    listed = ", ".join(sorted(d.name for d in idle))
    metadata = {"name": name, "namespace": service.namespace,
                "labels": {**names.managed(), names.SERVICE: service.name},
                "annotations": {REASON: f"every deployment this service selects has spec.replicas 0 ({listed}); "
                                        "requests get the gateway's answer for a backend without endpoints (503, "
                                        "or 500 on Envoy Gateway) until one scales up"}}
    placeholder = {"apiVersion": "v1", "kind": "Service", "metadata": metadata,
                   "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": replica_path(service.namespace, service.name)}}],
            "backendRefs": [{"group": "", "kind": "Service", "name": name, "port": 80, "weight": 1}]}
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": service.name, "namespace": service.namespace, "labels": names.managed()},
             "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": FLEET_GATEWAY,
                                      "namespace": SYSTEM_NAMESPACE}],
                      "rules": [rule]}}
    return [placeholder, route]
