"""The workload of each engine of a replica: a Deployment, or a LeaderWorkerSet for a gang.

Invariants:
- A Standalone engine is an `apps/v1` Deployment with `replicas = copies`; on a `stack: Dynamo`
  cluster its pods are scheduled by the KAI scheduler, and a gang is a Grove PodCliqueSet instead of
  a LeaderWorkerSet (`compose.grove`).
- A Leader/Worker engine is a `leaderworkerset.x-k8s.io/v1` LeaderWorkerSet with
  `replicas = copies`, `size = 1 + worker.nodes`, the leader template from the Leader member and
  the worker template from the Worker member; a failed pod restarts its whole group.
- Both use `pods.pod_template`, and each claiming member adds its ResourceClaimTemplate.
- Rollouts never need a node the placement did not reserve: the ledger charges a member exactly
  pods x copies nodes of its pool, so an update replaces copies one at a time (`maxSurge: 0`,
  `maxUnavailable: 1`, for a Deployment and a LeaderWorkerSet alike) instead of starting a surge
  copy first, which on a full pool would wait forever for a node. A replica with one copy is down
  while its pod restarts; the fleet route keeps serving from the deployment's other replicas.
- On a pool with `zeroDowntimeRollouts`, the ledger kept room for one more pod of each size
  (`MemberPlacement.surge`), so a Standalone engine there surges instead (`maxSurge: 1`,
  `maxUnavailable: 0`): a new pod serves before an old one stops. Gangs never surge: Kubernetes
  cannot schedule a group all or nothing, so two surging groups could each hold part of the room.
"""

from __future__ import annotations

from modelplane.api import Engine, Role, ServingStack
from modelplane.compose import claims, grove
from modelplane.compose.pods import pod_template
from modelplane.compose.replica import ReplicaContext

NO_SURGE = {"maxSurge": 0, "maxUnavailable": 1}
SURGE = {"maxSurge": 1, "maxUnavailable": 0}


def engine_objects(ctx: ReplicaContext, engine: Engine) -> list[dict]:
    """The engine's workload and the claim templates of its claiming members."""
    workload = ctx.workload_name(engine)
    placements = ctx.replica.engines[engine.name]
    members = {member.role: member for member in engine.members}
    templates = {role: pod_template(ctx, engine, member, placements[role], workload) for role, member in members.items()}
    objects = [template for role in members
               if (template := claims.claim_template(ctx, workload, role, placements[role])) is not None]
    metadata = ctx.metadata(workload, **ctx.engine_selector(engine))
    dynamo = ctx.stack is ServingStack.DYNAMO
    if engine.multi_node and dynamo:
        objects.append(grove.pod_clique_set(metadata, engine.copies, members[Role.WORKER].pods,
                                            templates[Role.LEADER], templates[Role.WORKER]))
    elif engine.multi_node:
        worker = members[Role.WORKER]
        objects.append({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": metadata,
                        "spec": {"replicas": engine.copies, "startupPolicy": "LeaderCreated",
                                 "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdateConfiguration": NO_SURGE},
                                 "leaderWorkerTemplate": {"size": 1 + worker.pods,
                                                          "restartPolicy": "RecreateGroupOnPodRestart",
                                                          "leaderTemplate": templates[Role.LEADER],
                                                          "workerTemplate": templates[Role.WORKER]}}})
    else:
        objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
                        "spec": {"replicas": engine.copies, "selector": {"matchLabels": ctx.engine_selector(engine)},
                                 "strategy": {"type": "RollingUpdate",
                                              "rollingUpdate": SURGE if placements[Role.STANDALONE].surge else NO_SURGE},
                                 "template": grove.kai_scheduled(templates[Role.STANDALONE]) if dynamo
                                 else templates[Role.STANDALONE]}})
    return objects
