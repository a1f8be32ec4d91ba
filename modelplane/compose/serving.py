"""Unified serving: a Service per engine and the replica's route on the cluster's inference Gateway.

Invariants:
- Each engine's Service selects that engine's serving pods only (Standalone pods, or LWS leaders),
  on the engine's serving port.
- Each replica gets one HTTPRoute on its cluster's inference Gateway: `/<namespace>/<replica>/v1/` is
  rewritten to `/v1/` (so `/<namespace>/<replica>/v1/models` reaches the engine as `/v1/models`).
  Only the OpenAI-compatible API (`OPENAI_PREFIX`) is routed: an engine's `/metrics`, `/tokenize`,
  `/health` and the rest are not reachable through any gateway (the cluster's service routes match
  only that prefix too, `routing.cluster_route`).
  A replica with several Unified engines spreads its requests evenly over them.
- Every route Modelplane puts on an inference Gateway (`inference_route`) disables the request
  timeout, so long token streams are never cut.
"""

from __future__ import annotations

from modelplane.api import Engine
from modelplane.compose import names
from modelplane.compose.replica import ReplicaContext, serving_member, serving_port
from modelplane.compose.stack import INFERENCE_GATEWAY, SYSTEM_NAMESPACE


OPENAI_PREFIX = "/v1/"
"""The only path prefix of an engine any inference Gateway route reaches: the OpenAI-compatible API."""


def replica_path(namespace: str, replica: str) -> str:
    return f"/{namespace}/{replica}/"


def unified_objects(ctx: ReplicaContext) -> list[dict]:
    return [*(engine_service(ctx, engine) for engine in ctx.deployment.spec.engines),
            replica_route(ctx, unified_refs(ctx))]


def unified_refs(ctx: ReplicaContext) -> list[dict]:
    """The backendRefs of a Unified replica: its engines' Services, in engine order."""
    return [{"group": "", "kind": "Service", "name": ctx.service_name(engine), "port": engine_port(engine), "weight": 1}
            for engine in ctx.deployment.spec.engines]


def engine_port(engine: Engine) -> int:
    return serving_port(serving_member(engine).template.container)


def engine_service(ctx: ReplicaContext, engine: Engine) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": ctx.metadata(ctx.service_name(engine)),
            "spec": {"selector": {**ctx.engine_selector(engine), names.SERVING: "true"},
                     "ports": [{"name": "http", "port": engine_port(engine), "targetPort": "http", "protocol": "TCP"}]}}


def replica_route(ctx: ReplicaContext, backend_refs: list[dict]) -> dict:
    """The HTTPRoute that exposes this replica's OpenAI API at `/<namespace>/<replica>/v1/` on its cluster."""
    prefix = replica_path(ctx.namespace, ctx.name) + OPENAI_PREFIX.lstrip("/")
    rule = {"matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
            "filters": [{"type": "URLRewrite", "urlRewrite": {
                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": OPENAI_PREFIX}}}],
            "backendRefs": backend_refs}
    return inference_route(ctx.metadata(ctx.name), rule)


def inference_route(metadata: dict, rule: dict, hostnames: list[str] | None = None) -> dict:
    """An HTTPRoute on the cluster's inference Gateway with `rule` (its request timeout turned off)."""
    spec: dict = {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                  "name": INFERENCE_GATEWAY, "namespace": SYSTEM_NAMESPACE}],
                  "rules": [{**rule, "timeouts": {"request": "0s"}}]}
    if hostnames:
        spec["hostnames"] = hostnames
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": metadata, "spec": spec}
