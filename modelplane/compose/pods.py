"""The pod template of one member of one engine: built once, used by Deployments and LeaderWorkerSets.

Invariants:
- The container named `engine` keeps the user's image, command, args and env verbatim (but a
  `fieldRef` gets the `apiVersion: v1` the API server would default: the invariant of
  `modelplane.compose`); Modelplane only adds, in this order, its own env *ahead* of the user's (so the user's env can read it as
  `$(NAME)`, and a user variable of the same name replaces Modelplane's), the cache mount and,
  under the cache's rule, `--model=/mnt/models` after the user's args.
- Injected env: in a gang, `MODELPLANE_LEADER_ADDRESS` and `MODELPLANE_RANK` (from the
  `LWS_LEADER_ADDRESS`/`LWS_WORKER_INDEX` that LeaderWorkerSet prepends to every container's env),
  on a Dynamo cluster `MODELPLANE_LEADER_ADDRESS` only (`grove.gang_env`: Grove's rank variable
  comes after the container's env, so it cannot be copied) and, with a ModelCache, the ModelExpress
  client settings; in a prefill/decode engine, the NIXL side-channel address.
- Every pod is pinned to its pool (`nodeSelector: modelplane.ai/pool`), tolerates the GPU taint and
  the deployment's tolerations, and mounts a memory-backed /dev/shm. Serving pods (Standalone,
  Leader) expose the serving port and are ready when `/health` answers.
- A pod claims its member's ResourceClaimTemplate only when the member claims devices.
- Hardened (`hardening`): no ServiceAccount token, the runtime's seccomp profile, and the engine
  container with every "restricted" setting that keeps the image's user (no privilege
  escalation, no capabilities), or the user, group and baseline capabilities its template's
  `securityContext` asks for (`hardening.engine_context`).
"""

from __future__ import annotations

from modelplane.api import Engine, Member, Role, ServingStack
from modelplane.compose import cache, claims, grove, hardening, names, prefill_decode
from modelplane.compose.replica import ReplicaContext, serving_port
from modelplane.compose.stack import GPU_TOLERATION
from modelplane.scheduling import MemberPlacement

SHM_VOLUME = "dshm"


def pod_template(ctx: ReplicaContext, engine: Engine, member: Member, placement: MemberPlacement,
                 workload: str) -> dict:
    """The PodTemplateSpec of `member`'s pods (Deployment template, or LWS leader/worker template)."""
    serving = member.role is not Role.WORKER
    labels = {**member.template.metadata.labels, **ctx.labels(), **ctx.engine_selector(engine),
              names.ROLE: member.role.lower()}
    if serving:
        labels[names.SERVING] = "true"
    if ctx.prefill_decode:
        labels.update(prefill_decode.role_labels(engine))
    metadata: dict = {"labels": labels}
    if member.template.metadata.annotations:
        metadata["annotations"] = dict(member.template.metadata.annotations)

    volumes: list[dict] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    if ctx.cache is not None:
        volumes.append(cache.volume(ctx.cache))
    tolerations = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in ctx.deployment.spec.tolerations]
    spec: dict = {"automountServiceAccountToken": False, "securityContext": hardening.hardened(hardening.ENGINE_POD),
                  "nodeSelector": {names.POOL: placement.pool},
                  "tolerations": [dict(GPU_TOLERATION), *tolerations],
                  "containers": [engine_container(ctx, engine, member, placement, serving)],
                  "volumes": volumes}
    if placement.requests:
        spec["resourceClaims"] = [{"name": claims.POD_CLAIM,
                                   "resourceClaimTemplateName": claims.template_name(workload, member.role)}]
    if serving and ctx.prefill_decode and prefill_decode.fronted_by_sidecar(engine):
        spec["initContainers"] = [prefill_decode.sidecar(ctx.settings, ctx.deployment, engine)]
    if member.template.spec.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": ref.name} for ref in member.template.spec.image_pull_secrets]
    return {"metadata": metadata, "spec": spec}


def user_variable(var: dict) -> dict:
    """The user's variable as written, with a `fieldRef`'s `apiVersion` the API server would default (v1)
    written out: `fieldRef` is an atomic struct, so a second field manager applying it without the
    default (a restarted create) would conflict with the first."""
    field_ref = var.get("valueFrom", {}).get("fieldRef")
    if field_ref is None or "apiVersion" in field_ref:
        return var
    return {**var, "valueFrom": {"fieldRef": {"apiVersion": "v1", **field_ref}}}


def engine_container(ctx: ReplicaContext, engine: Engine, member: Member, placement: MemberPlacement,
                     serving: bool) -> dict:
    user = member.template.container
    user_env = [user_variable(var.model_dump(mode="json", by_alias=True, exclude_none=True)) for var in user.env]
    user_names = {var["name"] for var in user_env}
    ours = [var for var in injected_env(ctx, engine) if var["name"] not in user_names]
    container: dict = {"name": "engine", "image": user.image, "securityContext": hardening.engine_context(user)}
    if user.command:
        container["command"] = list(user.command)
    args = list(user.args)
    if ctx.cache is not None and cache.needs_model_arg(user):
        args.append(cache.MODEL_ARG)
    if args:
        container["args"] = args
    if ours or user_env:
        container["env"] = [*ours, *user_env]
    mounts = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    if ctx.cache is not None:
        mounts.append(cache.mount())
    container["volumeMounts"] = mounts
    if placement.requests:
        container["resources"] = {"claims": [{"name": claims.POD_CLAIM}]}
    if serving:
        port = serving_port(user)
        container["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": port},
                                       "periodSeconds": 10, "failureThreshold": 3}
    return container


def injected_env(ctx: ReplicaContext, engine: Engine) -> list[dict]:
    env: list[dict] = []
    dynamo = ctx.stack is ServingStack.DYNAMO
    if engine.multi_node and dynamo:
        env += grove.gang_env(ctx.workload_name(engine), ctx.namespace)
    elif engine.multi_node:
        env += [{"name": "MODELPLANE_LEADER_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"},
                {"name": "MODELPLANE_RANK", "value": "$(LWS_WORKER_INDEX)"}]
    if dynamo and ctx.cache is not None:
        env += grove.modelexpress_env()
    if ctx.prefill_decode:
        env += prefill_decode.nixl_env()
    return env
