"""What-if edits: a change to the fleet or the workloads, made in memory before planning.

`parse_edit(text)` reads one `plan --what-if` argument into an `Edit`; `apply_edits(fleet,
workloads, edits)` returns edited copies (the inputs are never changed), which `place()` then plans
like any other manifests, sticky against the same previous placement. Each edit checks what it
names: an unknown cluster, pool, class or deployment raises `EditError` naming it and listing the
valid ones. `str(edit)` is the edit's canonical text, which `parse_edit` reads back.

    pool CLUSTER/POOL nodes=N              the pool's capacity: maxNodeCount if set, else nodeCount
    pool CLUSTER/POOL class=CLASS nodes=N  a new pool of CLASS with nodeCount N
    pool CLUSTER/POOL remove               the pool goes away (its replicas must move)
    drain CLUSTER                          as if tainted NoExecute: its replicas must move
    remove CLUSTER                         the cluster goes away
    replicas NAMESPACE/NAME=N              the deployment's replicas
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from modelplane.api import ClusterSource, Fleet, InferenceClass, InferenceCluster, NodePool, Taint, TaintEffect, Workloads

FORMS = ("pool CLUSTER/POOL nodes=N", "pool CLUSTER/POOL class=CLASS nodes=N", "pool CLUSTER/POOL remove",
         "drain CLUSTER", "remove CLUSTER", "replicas NAMESPACE/NAME=N")
DRAIN_TAINT = Taint(key="modelplane.ai/what-if-drain", effect=TaintEffect.NO_EXECUTE)
MAX_NODES = 10000  # NodePool.nodeCount's bound
MAX_REPLICAS = 1000  # ModelDeployment.spec.replicas' bound


class EditError(ValueError):
    """An edit that cannot be read or names something that does not exist; the message says which."""


@dataclass(frozen=True)
class SetPoolNodes:
    cluster: str
    pool: str
    nodes: int

    def __str__(self) -> str:
        return f"pool {self.cluster}/{self.pool} nodes={self.nodes}"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        cluster = _cluster(fleet, self.cluster)
        pool = _pool(cluster, self.pool)
        if pool.max_node_count is not None and self.nodes > 0:
            resized = pool.model_copy(update={
                "max_node_count": self.nodes, "node_count": min(pool.node_count, self.nodes),
                "min_node_count": None if pool.min_node_count is None else min(pool.min_node_count, self.nodes)})
        else:  # maxNodeCount cannot be 0: an empty pool is a fixed pool of 0 nodes
            resized = pool.model_copy(update={
                "max_node_count": None, "node_count": self.nodes,
                "min_node_count": None if pool.min_node_count is None else min(pool.min_node_count, self.nodes)})
        pools = tuple(resized if p.name == self.pool else p for p in cluster.spec.node_pools)
        return _with_cluster(fleet, _with_pools(cluster, pools)), workloads


@dataclass(frozen=True)
class AddPool:
    cluster: str
    pool: str
    class_name: str
    nodes: int

    def __str__(self) -> str:
        return f"pool {self.cluster}/{self.pool} class={self.class_name} nodes={self.nodes}"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        cluster = _cluster(fleet, self.cluster)
        if cluster.pool(self.pool) is not None:
            raise EditError(f"cluster {self.cluster} already has a pool {self.pool!r}: resize it with "
                            f"`pool {self.cluster}/{self.pool} nodes=N`")
        klass = fleet.inference_class(self.class_name)
        if klass is None:
            raise EditError(f"no InferenceClass {self.class_name!r} (classes: {_names(fleet.classes)})")
        if not provisionable(cluster, klass):
            usable = [c for c in fleet.classes if provisionable(cluster, c)]
            raise EditError(f"InferenceClass {self.class_name!r} has no provisioning for "
                            f"{cluster.spec.cluster.source}, so cluster {self.cluster} cannot have a pool of it "
                            f"(classes it can: {_names(usable)})")
        try:
            pool = NodePool(name=self.pool, class_name=self.class_name, node_count=self.nodes)
        except ValidationError as error:
            raise EditError(f"pool {self.pool!r}: {error.errors()[0]['msg']}") from None
        return _with_cluster(fleet, _with_pools(cluster, (*cluster.spec.node_pools, pool))), workloads


@dataclass(frozen=True)
class RemovePool:
    cluster: str
    pool: str

    def __str__(self) -> str:
        return f"pool {self.cluster}/{self.pool} remove"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        cluster = _cluster(fleet, self.cluster)
        _pool(cluster, self.pool)
        pools = tuple(p for p in cluster.spec.node_pools if p.name != self.pool)
        return _with_cluster(fleet, _with_pools(cluster, pools)), workloads


@dataclass(frozen=True)
class Drain:
    cluster: str

    def __str__(self) -> str:
        return f"drain {self.cluster}"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        cluster = _cluster(fleet, self.cluster)
        spec = cluster.spec.model_copy(update={"taints": (*cluster.spec.taints, DRAIN_TAINT)})
        return _with_cluster(fleet, cluster.model_copy(update={"spec": spec})), workloads


@dataclass(frozen=True)
class RemoveCluster:
    cluster: str

    def __str__(self) -> str:
        return f"remove {self.cluster}"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        _cluster(fleet, self.cluster)
        return dataclasses.replace(fleet, clusters=tuple(c for c in fleet.clusters if c.name != self.cluster)), workloads


@dataclass(frozen=True)
class SetReplicas:
    deployment: str
    replicas: int

    def __str__(self) -> str:
        return f"replicas {self.deployment}={self.replicas}"

    def apply(self, fleet: Fleet, workloads: Workloads) -> tuple[Fleet, Workloads]:
        target = workloads.deployment(self.deployment)
        if target is None:
            raise EditError(f"no ModelDeployment {self.deployment!r} (deployments: "
                            f"{', '.join(d.key for d in workloads.deployments) or 'none'})")
        scaled = target.model_copy(update={"spec": target.spec.model_copy(update={"replicas": self.replicas})})
        deployments = tuple(scaled if d.key == self.deployment else d for d in workloads.deployments)
        return fleet, dataclasses.replace(workloads, deployments=deployments)


Edit = SetPoolNodes | AddPool | RemovePool | Drain | RemoveCluster | SetReplicas

_NAME = r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?"
_POOL = re.compile(rf"^pool ({_NAME})/({_NAME}) (.+)$")
_CLUSTER = re.compile(rf"^(drain|remove) ({_NAME})$")
_REPLICAS = re.compile(rf"^replicas ({_NAME})/({_NAME})=(\S+)$")


def parse_edit(text: str) -> Edit:
    """Read one edit (words separated by any whitespace); raise EditError listing the forms if it is none."""
    words = " ".join(text.split())
    if match := _POOL.fullmatch(words):
        return _pool_edit(match.group(1), match.group(2), match.group(3), words)
    if match := _CLUSTER.fullmatch(words):
        return Drain(match.group(2)) if match.group(1) == "drain" else RemoveCluster(match.group(2))
    if match := _REPLICAS.fullmatch(words):
        key = f"{match.group(1)}/{match.group(2)}"
        return SetReplicas(key, _count(match.group(3), words, "replicas", 1, MAX_REPLICAS))
    raise EditError(f"cannot read the edit {text!r}: use one of: {'; '.join(FORMS)}")


def provisionable(cluster: InferenceCluster, klass: InferenceClass) -> bool:
    """Whether the cluster can have a pool of the class: any class on an Existing cluster, else one
    that says how to provision it on the cluster's cloud (the loader's rule for declared pools)."""
    source = cluster.spec.cluster.source
    return source is ClusterSource.EXISTING or (
        klass.spec.provisioning is not None and klass.spec.provisioning.provider == source)


def apply_edits(fleet: Fleet, workloads: Workloads, edits: Sequence[Edit]) -> tuple[Fleet, Workloads]:
    """Apply `edits` in order; an edit sees the fleet as the previous edits left it."""
    for edit in edits:
        fleet, workloads = edit.apply(fleet, workloads)
    return fleet, workloads


def _pool_edit(cluster: str, pool: str, rest: str, words: str) -> Edit:
    if rest == "remove":
        return RemovePool(cluster, pool)
    settings = dict(word.partition("=")[::2] for word in rest.split(" "))
    if set(settings) == {"nodes"}:
        return SetPoolNodes(cluster, pool, _count(settings["nodes"], words, "nodes", 0, MAX_NODES))
    if set(settings) == {"class", "nodes"}:
        return AddPool(cluster, pool, settings["class"], _count(settings["nodes"], words, "nodes", 0, MAX_NODES))
    raise EditError(f"cannot read the edit {words!r}: a pool edit is `nodes=N`, `class=CLASS nodes=N` or `remove`")


def _count(value: str, words: str, name: str, low: int, high: int) -> int:
    if not value.isdigit() or not low <= int(value) <= high:
        raise EditError(f"{words!r}: {name} must be a whole number from {low} to {high}, not {value!r}")
    return int(value)


def _cluster(fleet: Fleet, name: str) -> InferenceCluster:
    cluster = fleet.cluster(name)
    if cluster is None:
        raise EditError(f"no InferenceCluster {name!r} (clusters: {_names(fleet.clusters)})")
    return cluster


def _pool(cluster: InferenceCluster, name: str) -> NodePool:
    pool = cluster.pool(name)
    if pool is None:
        raise EditError(f"cluster {cluster.name} has no pool {name!r} (pools: "
                        f"{', '.join(p.name for p in cluster.spec.node_pools) or 'none'})")
    return pool


def _with_pools(cluster: InferenceCluster, pools: tuple[NodePool, ...]) -> InferenceCluster:
    return cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"node_pools": pools})})


def _with_cluster(fleet: Fleet, cluster: InferenceCluster) -> Fleet:
    return dataclasses.replace(fleet, clusters=tuple(cluster if c.name == cluster.name else c for c in fleet.clusters))


def _names(objects: Sequence[InferenceCluster] | Sequence[InferenceClass]) -> str:
    return ", ".join(o.name for o in objects) or "none"
