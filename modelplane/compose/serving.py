"""Unified serving: a Service per engine and the replica's route on the cluster's inference Gateway.

Invariants:
- Each engine's Service selects that engine's serving pods only (Standalone pods, or LWS leaders),
  on the engine's serving port.
- Each replica gets one HTTPRoute on its cluster's inference Gateway: `/<namespace>/<replica>/` is
  rewritten to `/` (so `/<namespace>/<replica>/v1/models` reaches the engine as `/v1/models`)
  and the request timeout is disabled, so long token streams are never cut. A replica with several
  Unified engines spreads its requests evenly over them.
"""

from __future__ import annotations

from modelplane.api import Engine
from modelplane.compose import names
from modelplane.compose.replica import ReplicaContext, serving_member, serving_port
from modelplane.compose.stack import INFERENCE_GATEWAY, SYSTEM_NAMESPACE


def replica_path(namespace: str, replica: str) -> str:
    return f"/{namespace}/{replica}/"


def unified_objects(ctx: ReplicaContext) -> list[dict]:
    services = [engine_service(ctx, engine) for engine in ctx.deployment.spec.engines]
    refs = [{"group": "", "kind": "Service", "name": service["metadata"]["name"],
             "port": service["spec"]["ports"][0]["port"]} for service in services]
    return [*services, replica_route(ctx, refs)]


def engine_service(ctx: ReplicaContext, engine: Engine) -> dict:
    port = serving_port(serving_member(engine).template.container)
    return {"apiVersion": "v1", "kind": "Service", "metadata": ctx.metadata(ctx.workload_name(engine)),
            "spec": {"selector": {**ctx.engine_selector(engine), names.SERVING: "true"},
                     "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}]}}


def replica_route(ctx: ReplicaContext, backend_refs: list[dict]) -> dict:
    """The HTTPRoute that exposes this replica at `/<namespace>/<replica>/` on its cluster."""
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": ctx.metadata(ctx.name),
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                     "name": INFERENCE_GATEWAY, "namespace": SYSTEM_NAMESPACE}],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix",
                                                      "value": replica_path(ctx.namespace, ctx.name)}}],
                                "filters": [{"type": "URLRewrite", "urlRewrite": {
                                    "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                                "backendRefs": backend_refs,
                                "timeouts": {"request": "0s"}}]}}
