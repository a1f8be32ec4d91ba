"""PrefillDecode serving: inference-aware routing that sends each request to prefill, then decode.

Per replica, on its cluster (Gateway API Inference Extension v1 + llm-d's scheduler and sidecar):
- an `InferencePool` selecting the replica's serving pods of both phase engines on the pool port;
- an endpoint picker (Deployment, Service, ServiceAccount, Role, RoleBinding, ConfigMap) whose
  config has a `prefill` and a `decode` scheduling profile, each filtering pods by `llm-d.ai/role`;
- llm-d's routing sidecar in the decode engine's serving pods: it listens on the pool port, asks
  the prefill pod chosen by the picker to prefill, then forwards to the local decode engine;
- the replica's HTTPRoute pointing at the InferencePool.

The pool port is the prefill engine's serving port; the sidecar takes that port on decode pods, so
the decode engine must serve on another one (its own `--port`: Modelplane never injects flags).
Both engines get the NIXL side-channel env. Warnings (never errors: the engine flags are the
user's) flag a phase engine without KV-transfer flags, a vLLM image too old to ship NIXL, and a
decode engine whose port collides with the sidecar's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml

from modelplane.api import Engine, ModelDeployment, Phase
from modelplane.compose import hardening, names
from modelplane.compose.replica import ReplicaContext, serving_member, serving_port
from modelplane.compose.serving import replica_route
from modelplane.compose.settings import Settings
from modelplane.invariants import present

ROLE_LABEL = "llm-d.ai/role"
"""The pod label llm-d's `prefill-filter` and `decode-filter` select on."""
NIXL_SIDE_CHANNEL_PORT = "5557"
EPP_GRPC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_METRICS_PORT = 9090
EPP_CONFIG_FILE = "pd-config.yaml"
KV_TRANSFER_FLAGS = ("--kv-transfer-config", "--disaggregation-mode")
"""vLLM's KV connector flag, and SGLang's prefill/decode flag."""

# vLLM's own image ships NIXL from the 0.11 line on (its Docker build installs
# requirements/kv_connectors.txt; vllm-project/vllm#41637 shows v0.20.1 importing nixl). Older
# tags are taken to lack it: an approximation that errs toward warning.
NIXL_SINCE = (0, 11, 0)
_VLLM_TAG = re.compile(r"^(?:docker\.io/)?vllm/vllm-openai:v?(\d+)\.(\d+)\.(\d+)")

# The scheduler config of llm-d v0.3 (llm-d-inference-scheduler, P/D guide): threshold 0 sends every
# request through prefill then decode; each profile keeps only the pods of its phase.
_PICKER_CONFIG = {
    "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
    "kind": "EndpointPickerConfig",
    "plugins": [{"type": "prefill-header-handler"}, {"type": "prefill-filter"}, {"type": "decode-filter"},
                {"type": "queue-scorer"}, {"type": "max-score-picker"},
                {"type": "pd-profile-handler", "parameters": {"threshold": 0}}],
    "schedulingProfiles": [
        {"name": phase, "plugins": [{"pluginRef": f"{phase}-filter"}, {"pluginRef": "queue-scorer", "weight": 1},
                                    {"pluginRef": "max-score-picker"}]}
        for phase in ("prefill", "decode")],
}


def phase_engine(deployment: ModelDeployment, phase: Phase) -> Engine:
    return next(engine for engine in deployment.spec.engines if engine.phase is phase)


def pool_port(deployment: ModelDeployment) -> int:
    return serving_port(serving_member(phase_engine(deployment, Phase.PREFILL)).template.container)


def role_labels(engine: Engine) -> dict[str, str]:
    phase = present(engine.phase, f"validated: engine {engine.name} of a PrefillDecode deployment has a phase")
    return {ROLE_LABEL: phase.lower()}


def nixl_env() -> list[dict]:
    return [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": NIXL_SIDE_CHANNEL_PORT}]


def fronted_by_sidecar(engine: Engine) -> bool:
    return engine.phase is Phase.DECODE


def sidecar(settings: Settings, deployment: ModelDeployment, engine: Engine) -> dict:
    """llm-d's routing sidecar, as a native sidecar (an init container that keeps running)."""
    port = pool_port(deployment)
    return {"name": "routing-sidecar", "image": settings.pd_sidecar_image, "restartPolicy": "Always",
            "args": [f"--port={port}", f"--vllm-port={serving_port(serving_member(engine).template.container)}",
                     "--connector=nixlv2", "--secure-proxy=false"],
            "ports": [{"name": "proxy", "containerPort": port, "protocol": "TCP"}],
            "securityContext": {**hardening.hardened(hardening.RESTRICTED_CONTAINER), "runAsUser": hardening.NON_ROOT,
                                "runAsGroup": hardening.NON_ROOT}}


def routing_objects(ctx: ReplicaContext) -> list[dict]:
    """The InferencePool, its endpoint picker and the replica's HTTPRoute."""
    picker = names.name(ctx.name, "epp")
    picker_labels = {names.COMPONENT: "endpoint-picker", names.DEPLOYMENT: ctx.deployment.name,
                     names.CLUSTER: ctx.cluster, names.REPLICA_INDEX: str(ctx.replica.index)}
    serving_pods = {names.DEPLOYMENT: ctx.deployment.name, names.CLUSTER: ctx.cluster,
                    names.REPLICA_INDEX: str(ctx.replica.index), names.SERVING: "true"}
    pool = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
            "metadata": ctx.metadata(ctx.name),
            "spec": {"selector": {"matchLabels": serving_pods},
                     "targetPorts": [{"number": pool_port(ctx.deployment)}],
                     "endpointPickerRef": {"name": picker, "port": {"number": EPP_GRPC_PORT},
                                           "failureMode": "FailClose"}}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": ctx.metadata(picker),
              "data": {EPP_CONFIG_FILE: yaml.safe_dump(_PICKER_CONFIG, sort_keys=False)}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": ctx.metadata(picker)}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": ctx.metadata(picker),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"],
                       "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["inference.networking.x-k8s.io"],
                       "resources": ["inferenceobjectives", "inferencemodelrewrites"],
                       "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": ctx.metadata(picker),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": picker},
               "subjects": [{"kind": "ServiceAccount", "name": picker, "namespace": ctx.namespace}]}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": ctx.metadata(picker),
               "spec": {"selector": picker_labels,
                        "ports": [{"name": "grpc-ext-proc", "port": EPP_GRPC_PORT, "targetPort": EPP_GRPC_PORT,
                                   "protocol": "TCP", "appProtocol": "http2"}]}}
    health = {"grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"}, "periodSeconds": 10}
    container = {"name": "epp", "image": ctx.settings.endpoint_picker_image,
                 "args": ["--pool-name", ctx.name, "--pool-namespace", ctx.namespace,
                          "--config-file", f"/config/{EPP_CONFIG_FILE}",
                          "--grpc-port", str(EPP_GRPC_PORT), "--grpc-health-port", str(EPP_HEALTH_PORT)],
                 "ports": [{"name": "grpc", "containerPort": EPP_GRPC_PORT, "protocol": "TCP"},
                           {"name": "grpc-health", "containerPort": EPP_HEALTH_PORT, "protocol": "TCP"},
                           {"name": "metrics", "containerPort": EPP_METRICS_PORT, "protocol": "TCP"}],
                 "readinessProbe": health, "livenessProbe": health,
                 "securityContext": hardening.hardened(hardening.RESTRICTED_CONTAINER),
                 "volumeMounts": [{"name": "config", "mountPath": "/config", "readOnly": True}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": ctx.metadata(picker),
                  "spec": {"replicas": 1, "selector": {"matchLabels": picker_labels},
                           "template": {"metadata": {"labels": {**ctx.labels(), **picker_labels}},
                                        "spec": {"serviceAccountName": picker, "containers": [container],
                                                 "securityContext": hardening.hardened(hardening.RESTRICTED_POD),
                                                 "volumes": [{"name": "config", "configMap": {"name": picker}}]}}}}
    return [pool, config, account, role, binding, service, deployment, replica_route(ctx, pool_refs(ctx))]


def pool_refs(ctx: ReplicaContext) -> list[dict]:
    """The backendRefs of a PrefillDecode replica: its InferencePool alone."""
    return [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": ctx.name, "weight": 1}]


def warnings(deployment: ModelDeployment) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """(field location, message, code) for each way this PrefillDecode deployment would misbehave."""
    for e, engine in enumerate(deployment.spec.engines):
        for m, member in enumerate(engine.members):
            container = member.template.container
            loc = ("spec", "engines", e, "members", m, "template", "spec", "containers", 0)
            words = " ".join((*container.command, *container.args))
            if not any(flag in words for flag in KV_TRANSFER_FLAGS):
                yield ((*loc, "args"),
                       f"the {engine.phase} engine {engine.name!r} carries no KV-transfer configuration "
                       f"({' or '.join(KV_TRANSFER_FLAGS)}): the pair would not hand the KV cache over and would "
                       "silently serve decode-only; add e.g. "
                       "'--kv-transfer-config={\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'",
                       "pd-no-kv-transfer")
            version = _VLLM_TAG.match(container.image)
            if version and tuple(int(part) for part in version.groups()) < NIXL_SINCE:
                yield ((*loc, "image"),
                       f"image {container.image!r} predates vLLM v{'.'.join(map(str, NIXL_SINCE))}, whose images "
                       "are the first to ship NIXL: the engine would crash with 'NIXL is not available'; "
                       "pin a current vllm/vllm-openai tag", "pd-no-nixl")
    decode = phase_engine(deployment, Phase.DECODE)
    port = pool_port(deployment)
    if serving_port(serving_member(decode).template.container) == port:
        e = deployment.spec.engines.index(decode)
        yield (("spec", "engines", e),
               f"the decode engine {decode.name!r} serves on port {port}, the port the prefill/decode routing "
               f"sidecar takes on decode pods (it fronts the decode engine on the prefill engine's port): "
               f"give the decode engine another port in its own args, e.g. '--port=8200'", "pd-port-conflict")
