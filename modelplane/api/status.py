"""What the control plane reports in an object's `status` (written back in control-cluster mode).

Status is output, never input: the loader accepts a `status` on a manifest (as `kubectl get -o
yaml` prints it) and ignores it (`dump_objects` leaves it out, so it never reaches the placement).
These models give status its schema, so the generated CRDs carry it (`kubectl get`, `explain`)
and the Pulumi layer's status writer builds a typed document. Conditions follow Kubernetes'
`metav1.Condition`; `lastTransitionTime` is set by the writer, when a condition's status changes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from modelplane.api.base import DNSLabel, Model, Role, Str, bounded


class ConditionType(StrEnum):
    SCHEDULED = "Scheduled"
    READY = "Ready"
    DEVICES_MATCH_CLASSES = "DevicesMatchClasses"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(Model):
    """One aspect of the object's state, as Kubernetes conditions report it."""

    type: ConditionType
    """Scheduled: every desired replica has a place. Ready: every desired replica was applied on its cluster by the
    last `pulumi up` (an InferenceClass, ModelCache or ModelEndpoint: the last `pulumi up` planned with its current
    spec); False with reason InvalidSpec when the loader refuses the spec, DependencyRefused when the object refers
    to a refused one. DevicesMatchClasses (an InferenceCluster): the devices its nodes publish match the
    InferenceClasses of their pools, as `modelplane validate --against-slices` checks."""
    status: ConditionStatus
    """True, False or Unknown."""
    reason: Annotated[Str, Field(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")]
    """Why, in one CamelCase word (e.g. InsufficientCapacity)."""
    message: Annotated[Str, Field(max_length=32768)] = ""
    """Why, for people: the scheduler's reasons when a deployment is short."""
    observed_generation: bounded(0, 2**62) | None = None
    """The object's metadata.generation the condition was computed from."""
    last_transition_time: Str | None = None
    """When the condition's status last changed (RFC 3339)."""


class MemberPlacementStatus(Model):
    """Where one member of one engine of a replica runs."""

    engine: DNSLabel
    """The engine's name."""
    role: Role
    """The member's role."""
    pool: Str
    """The node pool of the replica's cluster the member's pods are pinned to."""


class ReplicaStatus(Model):
    """One placed replica: its cluster, its index there and the pool of each member."""

    cluster: Str
    """The InferenceCluster the replica runs on."""
    index: bounded(0, 100_000)
    """The replica's index on its cluster (with the cluster, its identity: it never moves)."""
    members: tuple[MemberPlacementStatus, ...] = ()
    """Each engine member's pool, in the deployment's engine order."""


class ReplicaMoveStatus(Model):
    """A replica the control plane re-placed because its cluster was down past its grace period."""

    source: Str
    """The cluster the replica left."""
    index: bounded(0, 100_000)
    """Its index there."""
    target: Str | None = None
    """The cluster where the deployment gained a replica in the same run; absent when none had room."""
    reason: Str
    """Why, for people: how long the cluster had been unreachable or without a Ready node."""


class ModelDeploymentStatus(Model):
    """What the last `pulumi up` placed and applied for the deployment."""

    observed_generation: bounded(0, 2**62) | None = None
    """The metadata.generation this status describes."""
    replicas: bounded(0, 100_000) | None = None
    """Replicas scheduled (the scale subresource's status replicas, which KEDA and the HPA read)."""
    desired_replicas: bounded(0, 100_000) | None = None
    """spec.replicas as last observed."""
    ready: Str | None = None
    """Scheduled over desired replicas, e.g. 2/3: the READY column of `kubectl get modeldeployments`."""
    selector: Str | None = None
    """The label selector of the deployment's serving pods on its workload clusters (serialized, as the scale
    subresource's labelSelectorPath requires)."""
    clusters: Str | None = None
    """The clusters the replicas run on, comma-separated: the CLUSTERS column."""
    placements: tuple[ReplicaStatus, ...] = ()
    """Every placed replica: cluster, index and the pool of each member."""
    moves: tuple[ReplicaMoveStatus, ...] | None = None
    """Replicas moved off a cluster down past its grace period (observed capacity, control-cluster mode), kept
    while that cluster is still down; absent when there are none."""
    conditions: tuple[Condition, ...] = ()
    """Scheduled (False with the scheduler's reasons when short) and Ready."""


class PoolCapacityStatus(Model):
    """One node pool: the nodes declared, the usable nodes its cluster reports, and what was planned."""

    name: Str
    """The pool's name."""
    declared: bounded(0, 100_000)
    """spec.nodePools[].nodeCount."""
    observed: bounded(0, 100_000) | None = None
    """Usable nodes seen (Ready, publishing the class's devices); absent when the cluster was not read."""
    planned: bounded(0, 100_000)
    """The nodes the placement planned against: the lower of the two for a fixed-size pool of a cluster that is up."""


class InferenceClusterStatus(Model):
    """What the last `pulumi up` observed of the cluster (control-cluster mode; docs/observed-capacity.md)."""

    health: Str | None = None
    """Up, Down (within its grace period), Expired (down past it: its replicas are re-placed) or Unobserved."""
    reason: Str | None = None
    """Why, for people, when not Up."""
    down_since: bounded(0, 2**62) | None = None
    """When a run first saw it down (seconds since the epoch)."""
    pools: tuple[PoolCapacityStatus, ...] = ()
    """Declared and observed capacity per pool."""
    conditions: tuple[Condition, ...] | None = None
    """DevicesMatchClasses: True when the devices its nodes publish match its pools' InferenceClasses, False
    (PublishedDevicesDiffer) with each difference and its field path, Unknown (NotChecked) when they could not
    be read this run; absent when the cluster is not observed. Ready, only when the cluster's spec is refused
    (InvalidSpec) or a pool names a refused InferenceClass (DependencyRefused)."""


class ModelServiceStatus(Model):
    """Where the service answers."""

    observed_generation: bounded(0, 2**62) | None = None
    """The metadata.generation this status describes."""
    url: Str | None = None
    """The service's OpenAI-compatible base URL on the fleet gateway."""
    conditions: tuple[Condition, ...] = ()
    """Ready: the service's route is applied on the fleet gateway."""


class SpecStatus(Model):
    """Whether the last `pulumi up` planned with the object's current spec: the status of an InferenceClass,
    ModelCache or ModelEndpoint, kinds whose effect shows in the objects that use them."""

    observed_generation: bounded(0, 2**62) | None = None
    """The metadata.generation this status describes."""
    conditions: tuple[Condition, ...] = ()
    """Ready: True (SpecApplied) when the last `pulumi up` planned with this generation; False with the loader's
    messages (InvalidSpec) or the refused object it refers to (DependencyRefused) otherwise."""
