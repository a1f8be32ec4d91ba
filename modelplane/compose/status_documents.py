"""The status the control plane writes back to the control cluster's objects after a `pulumi up`.

`statuses(manifests, placement, observed, skipped, urls, gateway_address)` returns, per object that
reports status, `{"uid": ..., "status": {...}}` under `status_key(kind, namespace, name)`:
- a ModelDeployment: `observedGeneration`, `replicas` (scheduled: the scale subresource's status
  replicas), `desiredReplicas`, `ready` (`scheduled/desired`), `selector` (its serving pods on the
  workload clusters, which the scale subresource requires), `clusters`, each replica's cluster,
  index and member pools, and the conditions Scheduled (False with the scheduler's reasons when
  short) and Ready;
- a ModelService: its URL on the fleet gateway and Ready;
- an InferenceClass, ModelCache or ModelEndpoint: Ready (True, SpecApplied: the run planned with its
  current spec);
- the InferenceGateway: its address;
- with observed capacity (`capacity`, the placement's report, control-cluster mode): each
  InferenceCluster's health, why and since when it is down, and its pools' declared, observed and
  planned nodes; each ModelDeployment's replicas moved off a cluster down past its grace, and why;
- with what each observed cluster publishes (`published`, control-cluster mode: its Nodes and
  ResourceSlices as read this run, or why they could not be read), that InferenceCluster's condition
  DevicesMatchClasses: `compose.published`'s check, the one `modelplane validate --against-slices` runs.
An object of any kind the loader refused reports why in its Ready condition (False, reason InvalidSpec, the
loader's messages with their field paths); an InferenceCluster or InferenceGateway carries Ready only then
(and reports an empty status when it has nothing else to say, so an earlier run's refusal is cleared).
When it was accepted before (`held`) it is planned with that version, so the rest of its status
(replicas, placements) is what that version runs; one never accepted (`skipped`) runs nothing and
reports only the conditions. An object held or skipped because
it refers to a refused one reports Ready False, reason DependencyRefused, naming that object. Pure and deterministic:
keys sorted, conditions without timestamps (the writer sets `lastTransitionTime` when it patches).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import Manifests, ModelDeployment, Problem
from modelplane.api.gateway import InferenceGatewayStatus
from modelplane.api.manifests import ObjectKey, object_key
from modelplane.api.problems import path_text
from modelplane.api.served import Observed
from modelplane.api.slices import Published
from modelplane.api.status import (
    Condition,
    ConditionStatus,
    ConditionType,
    InferenceClusterStatus,
    MemberPlacementStatus,
    ModelDeploymentStatus,
    ModelServiceStatus,
    PoolCapacityStatus,
    ReplicaMoveStatus,
    ReplicaStatus,
    SpecStatus,
)
from modelplane.compose import names
from modelplane.compose.published import published_findings
from modelplane.scheduling import Placement

Status = ModelDeploymentStatus | ModelServiceStatus | InferenceClusterStatus | InferenceGatewayStatus | SpecStatus

SPEC_STATUS = ("InferenceClass", "ModelCache", "ModelEndpoint")
"""The kinds whose status says only whether the run planned with their spec (`SpecStatus`)."""
INVALID = "InvalidSpec"
WAITING = "DependencyRefused"
MAX_MESSAGE = 32768


def status_key(kind: str, namespace: str, name: str) -> str:
    """`Kind/namespace/name`, or `Kind/name` for a cluster-scoped kind."""
    return "/".join(part for part in (kind, namespace, name) if part)


def serving_selector(deployment: str) -> str:
    """The serialized label selector of a deployment's serving pods (what the scale subresource reports)."""
    labels = {**names.managed(), names.DEPLOYMENT: deployment, names.SERVING: "true"}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def statuses(manifests: Manifests, placement: Placement, observed: Mapping[ObjectKey, Observed],
             skipped: Mapping[ObjectKey, tuple[Problem, ...]], urls: Mapping[str, str],
             gateway_address: str, *, capacity: Mapping[str, Any] | None = None,
             refused: Mapping[ObjectKey, tuple[Problem, ...]] | None = None,
             held: Mapping[ObjectKey, tuple[ObjectKey, ...]] | None = None,
             published: Mapping[str, Published | str] | None = None) -> dict[str, dict[str, Any]]:
    """`refused`, `held`: as `api.served.Served` has them (none by default: from files); `published`:
    what each observed cluster publishes, or why it could not be read."""
    waiting = {key for key in skipped if refused is not None and key not in refused}
    refused, held = refused or {}, held or {}
    found: dict[ObjectKey, dict[str, Any]] = {}
    moves = capacity.get("moves", ()) if capacity else ()
    for deployment in manifests.workloads.deployments:
        key = ("ModelDeployment", deployment.namespace, deployment.name)
        moved = tuple(m for m in moves if m["deployment"] == deployment.key)
        found[key] = _dump(deployment_status(deployment, placement, _generation(observed, key), moved))
    if capacity or published:
        for cluster in manifests.fleet.clusters:
            key = ("InferenceCluster", "", cluster.name)
            status = cluster_status(cluster.name, capacity or {})
            if published and cluster.name in published:
                status = status.model_copy(update={"conditions": (
                    devices_condition(manifests, cluster.name, published[cluster.name], _generation(observed, key)),)})
            found[key] = _dump(status)
    gateway = manifests.fleet.gateway
    for service in manifests.workloads.services:
        key = ("ModelService", service.namespace, service.name)
        url = urls.get(f"{service.namespace}/{service.name}")
        generation = _generation(observed, key)
        ready = (_condition(ConditionType.READY, True, "RouteApplied", f"answering at {url}", generation)
                 if gateway is not None and url else
                 _condition(ConditionType.READY, False, "NoGateway", "the fleet has no InferenceGateway to route on",
                            generation))
        found[key] = _dump(ModelServiceStatus(observed_generation=generation, url=url, conditions=(ready,)))
    if gateway is not None and gateway_address:
        found[("InferenceGateway", "", gateway.name)] = {"address": gateway_address}
    for obj in (*manifests.fleet.classes, *manifests.workloads.caches, *manifests.workloads.endpoints):
        key = object_key(obj)
        generation = _generation(observed, key)
        found[key] = _dump(SpecStatus(observed_generation=generation, conditions=(_condition(
            ConditionType.READY, True, "SpecApplied", "the last `pulumi up` planned with this spec", generation),)))
    for key, problems in skipped.items():
        found[key] = _dump(invalid_status(key[0], problems, _generation(observed, key), key in waiting))
    for key, by in held.items():
        ready = _held_condition(key, by, refused.get(key, ()), _generation(observed, key))
        status = found.setdefault(key, {})  # a cluster without observed capacity, a gateway without an address
        status["conditions"] = [c for c in status.get("conditions", ()) if c["type"] != ConditionType.READY] + [
            ready.model_dump(mode="json", by_alias=True, exclude_none=True)]
    for obj in (*manifests.fleet.clusters, *((gateway,) if gateway is not None else ())):
        found.setdefault(object_key(obj), {})  # nothing to say, which clears a refusal written by an earlier run
    return {status_key(*key): {"uid": observed[key].uid if key in observed else "", "status": status}
            for key, status in sorted(found.items())}


def cluster_status(cluster: str, capacity: Mapping[str, Any]) -> InferenceClusterStatus:
    """The cluster's health and its pools' capacity from the placement's report (`scheduling.observed.report`),
    as it comes through the engine, which drops null values (`observed`, `to`, `downSince`)."""
    health = next((c for c in capacity.get("clusters", ()) if c["cluster"] == cluster), None)
    pools = tuple(PoolCapacityStatus(name=p["pool"], declared=p["declared"], observed=p.get("observed"),
                                     planned=p["planned"]) for p in capacity.get("pools", ()) if p["cluster"] == cluster)
    if health is None:
        return InferenceClusterStatus(pools=pools)
    return InferenceClusterStatus(health=health["health"], reason=health.get("why") or None,
                                  down_since=health.get("downSince"), pools=pools)


def devices_condition(manifests: Manifests, cluster: str, published: Published | str,
                      generation: int | None) -> Condition:
    """DevicesMatchClasses of `cluster`: from what its nodes publish, or, given why they could not be read
    (a string), Unknown."""
    kind = ConditionType.DEVICES_MATCH_CLASSES
    if isinstance(published, str):
        return _condition(kind, None, "NotChecked", f"not checked this run: {published}", generation)
    found = manifests.fleet.cluster(cluster)
    findings = published_findings(manifests, found, published) if found is not None else []
    if not findings:
        return _condition(kind, True, "PublishedDevicesMatch", "the devices the nodes publish match the "
                          "InferenceClass of each pool and every selector planned on it", generation)
    messages = sorted(f"{_named(object_key(f.obj))} {path_text(f.loc)}: {f.message}" for f in findings)
    return _condition(kind, False, "PublishedDevicesDiffer", "; ".join(messages), generation)


def deployment_status(deployment: ModelDeployment, placement: Placement, generation: int | None,
                      moves: tuple[Mapping[str, Any], ...] = ()) -> ModelDeploymentStatus:
    state = placement.deployments[deployment.key]
    replicas = placement.replicas_of(deployment.key)
    order = [(engine.name, member.role) for engine in deployment.spec.engines for member in engine.members]
    placed = tuple(ReplicaStatus(cluster=replica.cluster, index=replica.index, members=tuple(
        MemberPlacementStatus(engine=engine, role=role, pool=replica.engines[engine][role].pool)
        for engine, role in order)) for replica in replicas)
    counted = f"{state.scheduled}/{state.desired} replicas scheduled"
    scheduled = (_condition(ConditionType.SCHEDULED, True, "AllReplicasScheduled", counted, generation)
                 if not state.short else
                 _condition(ConditionType.SCHEDULED, False, "InsufficientCapacity",
                            "; ".join((counted, *state.reasons)), generation))
    ready = (_condition(ConditionType.READY, True, "ReplicasApplied", "every replica is applied on its cluster",
                        generation)
             if not state.short else
             _condition(ConditionType.READY, False, "ReplicasShort",
                        f"{state.desired - state.scheduled} of {state.desired} replicas have no place", generation))
    return ModelDeploymentStatus(
        observed_generation=generation, replicas=state.scheduled, desired_replicas=state.desired,
        ready=f"{state.scheduled}/{state.desired}", selector=serving_selector(deployment.name),
        clusters=",".join(sorted({replica.cluster for replica in replicas})) or None, placements=placed,
        moves=tuple(ReplicaMoveStatus(source=m["from"], index=m["index"], target=m.get("to"), reason=m["why"])
                    for m in moves) or None,
        conditions=(scheduled, ready))


def invalid_status(kind: str, problems: tuple[Problem, ...], generation: int | None, waiting: bool = False
                   ) -> Status:
    """The conditions of an object that runs nothing: refused, or (`waiting`) referring to a refused one."""
    types = (ConditionType.SCHEDULED, ConditionType.READY) if kind == "ModelDeployment" else (ConditionType.READY,)
    conditions = tuple(_condition(kind_, False, WAITING if waiting else INVALID, _messages(problems), generation)
                       for kind_ in types)
    if kind == "ModelDeployment":
        return ModelDeploymentStatus(observed_generation=generation, conditions=conditions)
    if kind == "ModelService":
        return ModelServiceStatus(observed_generation=generation, conditions=conditions)
    if kind == "InferenceCluster":
        return InferenceClusterStatus(conditions=conditions)
    if kind == "InferenceGateway":
        return InferenceGatewayStatus(conditions=conditions)
    return SpecStatus(observed_generation=generation, conditions=conditions)


def _held_condition(key: ObjectKey, by: tuple[ObjectKey, ...], problems: tuple[Problem, ...],
                    generation: int | None) -> Condition:
    kept = "; planned with its last accepted spec until it is fixed, so nothing it runs changes"
    if problems:
        return _condition(ConditionType.READY, False, INVALID, _messages(problems) + kept, generation)
    holders = ", ".join(" ".join((kind, f"{ns}/{name}" if ns else name)) for kind, ns, name in by if (kind, ns, name) != key)
    return _condition(ConditionType.READY, False, WAITING, f"{holders} is refused; this object is planned with its last "
                      "accepted spec until that is fixed, so nothing it runs changes", generation)


def _messages(problems: tuple[Problem, ...]) -> str:
    return "; ".join(f"{problem.path}: {problem.message}" if problem.path else problem.message for problem in problems)


def _condition(kind: ConditionType, ok: bool | None, reason: str, message: str, generation: int | None) -> Condition:
    """`ok`: True, False, or None for Unknown."""
    status = ConditionStatus.UNKNOWN if ok is None else ConditionStatus.TRUE if ok else ConditionStatus.FALSE
    return Condition(type=kind, status=status, reason=reason,
                     message=message[:MAX_MESSAGE], observed_generation=generation)


def _named(key: ObjectKey) -> str:
    """`Kind namespace/name`, or `Kind name` for a cluster-scoped kind."""
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _generation(observed: Mapping[ObjectKey, Observed], key: ObjectKey) -> int | None:
    return observed[key].generation if key in observed else None


def _dump(status: Status) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)
