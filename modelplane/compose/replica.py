"""One placed replica as the composer sees it: its deployment, placement, cache and names.

A `ReplicaContext` is built once per placed replica and handed to every builder, so each builder
derives names and labels the same way. The replica's name (`<deployment>-<cluster>-<index>`) is
the prefix of every object it owns and the path segment of its endpoint (`/<namespace>/<name>/`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelplane.api import Engine, Member, ModelCache, ModelDeployment, Role, ServingMode, ServingStack
from modelplane.api.workload import Container
from modelplane.compose import names
from modelplane.compose.settings import Settings
from modelplane.scheduling import Replica

DEFAULT_PORT = 8000
# `--port=9000`, `--port 9000`, also inside a `sh -c "... --port=9000 ..."` command string.
_PORT = re.compile(r"(?:^|\s)--port(?:=|\s+)(\d{1,5})(?=\s|$)")

# A StatefulSet's pods carry `controller-revision-hash: <statefulset>-<10 chars>`, a label value of
# at most 63 characters; LeaderWorkerSet names its worker StatefulSets `<lws>-<group index>`.
LWS_NAME_LIMIT = 45
# Grove refuses a PodCliqueSet whose name, scaling group name and clique name add up to more than 45
# characters (its admission webhook, for the pods' hostnames); ours are `gang` and `leader`/`worker`.
GROVE_NAME_LIMIT = 45 - len("gang") - len("leader")


def serving_port(container: Container) -> int:
    """The port the engine serves on: the last `--port` in its command or args, else 8000."""
    found = [int(port) for port in _PORT.findall(" ".join((*container.command, *container.args)))]
    return found[-1] if found else DEFAULT_PORT


def serving_member(engine: Engine) -> Member:
    """The member whose pods serve requests: the Standalone pod, or the Leader of a gang."""
    return next(m for m in engine.members if m.role in (Role.STANDALONE, Role.LEADER))


@dataclass(frozen=True)
class ReplicaContext:
    deployment: ModelDeployment
    replica: Replica
    cache: ModelCache | None
    settings: Settings
    stack: ServingStack = ServingStack.STANDARD
    """The serving stack of the replica's cluster: what a gang composes to and which scheduler runs its pods."""

    @property
    def name(self) -> str:
        return names.name(self.deployment.name, self.replica.cluster, str(self.replica.index))

    @property
    def namespace(self) -> str:
        return self.deployment.namespace

    @property
    def cluster(self) -> str:
        return self.replica.cluster

    @property
    def prefill_decode(self) -> bool:
        return self.deployment.spec.serving.mode is ServingMode.PREFILL_DECODE

    def labels(self) -> dict[str, str]:
        return names.replica_labels(self.deployment.name, self.cluster, self.replica.index)

    def metadata(self, name: str, **extra_labels: str) -> dict:
        """`metadata` of a namespaced object of this replica."""
        return {"name": name, "namespace": self.namespace, "labels": {**self.labels(), **extra_labels}}

    def workload_name(self, engine: Engine) -> str:
        """The Deployment/LeaderWorkerSet (and Service) of one engine of this replica."""
        if not engine.multi_node:
            limit = names.MAX_NAME
        else:
            limit = GROVE_NAME_LIMIT if self.stack is ServingStack.DYNAMO else LWS_NAME_LIMIT
        return names.name(self.name, engine.name, limit=limit)

    def service_name(self, engine: Engine) -> str:
        """The Service the replica's route sends one engine's requests to: the workload's name, except
        beside a LeaderWorkerSet, which owns a headless Service of its own name (the pods' subdomain,
        through which `LWS_LEADER_ADDRESS` resolves) and creates it only when no Service of that name
        exists (sigs.k8s.io/lws v0.9.0, `reconcileHeadlessServices`): sharing the name would take the
        gang's DNS away, or conflict with the controller's Service."""
        workload = self.workload_name(engine)
        if engine.multi_node and self.stack is not ServingStack.DYNAMO:
            return names.name(workload, "http")
        return workload

    def engine_selector(self, engine: Engine) -> dict[str, str]:
        """Labels that select the pods of one engine of this replica (and nothing else)."""
        return {names.DEPLOYMENT: self.deployment.name, names.CLUSTER: self.cluster,
                names.REPLICA_INDEX: str(self.replica.index), names.ENGINE: engine.name}
