"""A gang on a `stack: Dynamo` cluster: a Grove PodCliqueSet, its pods scheduled by the KAI scheduler.

Invariants (facts from ai-dynamo/grove v0.1.0-alpha.6, `operator/api` and `operator/internal`):
- One `grove.io/v1alpha1` PodCliqueSet per Leader + Worker engine, `spec.replicas: 1` (a replica of
  ours is one PodCliqueSet replica, index 0), with one PodCliqueScalingGroup `gang` over the cliques
  `leader` (1 pod) and `worker` (`worker.nodes` pods), whose `replicas` is the engine's `copies`:
  each copy is a gang of 1 + worker.nodes pods that KAI schedules all or nothing.
- No start ordering between the cliques (`CliqueStartupTypeAnyOrder`): gating the workers on the
  leader's readiness deadlocks, since the leader is Ready only once its workers joined.
- Names: Grove names a copy's clique `<set>-0-gang-<copy>-<clique>`, its pods' hostnames
  `<clique>-<pod index>` under the headless Service `<set>-0`, and refuses a set whose name, scaling
  group and clique names exceed 45 characters together (`replica.GROVE_NAME_LIMIT`).
- Grove appends its `GROVE_*` variables after the container's own env, and Kubernetes expands
  `$(NAME)` only from earlier entries, so the leader's address is built from what a pod knows
  first: the copy index, read from the pod's `grove.io/podcliquescalinggroup-replica-index` label
  through the downward API (`MODELPLANE_GANG_COPY`). The rank is Grove's own `GROVE_PCLQ_POD_INDEX`
  (0-based among the workers), which the engine reads itself (docs/dynamo.md).
- Every engine pod of a Dynamo cluster, a Standalone Deployment's too, has `schedulerName:
  kai-scheduler` and the `kai.scheduler/queue: modelplane` label (`kai_scheduled`).
"""

from __future__ import annotations

from modelplane.compose.stack import KAI_QUEUE, KAI_QUEUE_LABEL, KAI_SCHEDULER, MODELEXPRESS_ADDRESS

GROVE_API = "grove.io/v1alpha1"
SCALING_GROUP = "gang"
LEADER = "leader"
WORKER = "worker"
COPY_LABEL = "grove.io/podcliquescalinggroup-replica-index"


def kai_scheduled(template: dict) -> dict:
    """A pod template whose pods the KAI scheduler places, through the `modelplane` queue."""
    metadata = template["metadata"]
    return {"metadata": {**metadata, "labels": {**metadata["labels"], KAI_QUEUE_LABEL: KAI_QUEUE}},
            "spec": {"schedulerName": KAI_SCHEDULER, **template["spec"]}}


def clique(name: str, pods: int, template: dict) -> dict:
    """One PodCliqueTemplateSpec: the pod template's labels and annotations at the clique, its spec as `podSpec`."""
    scheduled = kai_scheduled(template)
    spec = {"roleName": name, "replicas": pods, "minAvailable": pods, "podSpec": scheduled["spec"]}
    return {"name": name, **scheduled["metadata"], "spec": spec}


def pod_clique_set(metadata: dict, copies: int, workers: int, leader: dict, worker: dict) -> dict:
    """The PodCliqueSet of one gang engine of one replica: `copies` gangs of a leader and `workers` workers."""
    return {"apiVersion": GROVE_API, "kind": "PodCliqueSet", "metadata": metadata,
            "spec": {"replicas": 1,
                     "template": {"cliqueStartupType": "CliqueStartupTypeAnyOrder",
                                  "cliques": [clique(LEADER, 1, leader), clique(WORKER, workers, worker)],
                                  "podCliqueScalingGroups": [{"name": SCALING_GROUP, "cliqueNames": [LEADER, WORKER],
                                                              "replicas": copies}]}}}


def gang_env(workload: str, namespace: str) -> list[dict]:
    """MODELPLANE_LEADER_ADDRESS of a gang pod: its copy's leader pod, by its stable DNS name."""
    service = f"{workload}-0"
    leader = f"{workload}-0-{SCALING_GROUP}-$(MODELPLANE_GANG_COPY)-{LEADER}-0"
    return [{"name": "MODELPLANE_GANG_COPY",
             "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.labels['{COPY_LABEL}']"}}},
            {"name": "MODELPLANE_LEADER_ADDRESS", "value": f"{leader}.{service}.{namespace}.svc.cluster.local"}]


def modelexpress_env() -> list[dict]:
    """The ModelExpress client settings of an engine with a ModelCache: the cluster's server. Both names
    (ai-dynamo/modelexpress v0.4.1 docs/DEPLOYMENT.md: MX_SERVER_ADDRESS is the new one, MODEL_EXPRESS_URL
    is deprecated but some client paths read only it, so set both)."""
    return [{"name": "MX_SERVER_ADDRESS", "value": MODELEXPRESS_ADDRESS},
            {"name": "MODEL_EXPRESS_URL", "value": MODELEXPRESS_ADDRESS}]
