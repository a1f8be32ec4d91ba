"""The platform team's kinds: InferenceClass, InferenceCluster (cluster-scoped; the InferenceGateway is in gateway.py).

An InferenceClass publishes the hardware of one node of a pool as DRA-style devices (driver, typed
attributes, capacity quantities, count per node) and, optionally, how a cloud provisions such a
node. An InferenceCluster is a cluster (provisioned on GKE, EKS, AKS, Nebius or Vultr, or an
existing one reached by kubeconfig) with node pools that each name a class; its labels are what
deployments select on. The InferenceGateway names the cluster that hosts the fleet's
OpenAI-compatible front door. The per-cloud blocks live in `clouds.py`.

Rules that concern one object live here as validators; rules across objects live in `refs.py`.
"""

from __future__ import annotations

import re
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from modelplane.api.base import (
    API_VERSION,
    DNS_LABEL_PATTERN,
    LABEL_KEY_MAX,
    LABEL_KEY_PATTERN,
    Bool,
    Claim,
    ClusterSource,
    DNSLabel,
    DNSSubdomain,
    FabricType,
    FieldError,
    Model,
    Named,
    NonEmptyStr,
    ObjectMeta,
    Str,
    TaintEffect,
    bounded,
    check_dns_label,
    checked_string,
    label_key_problem,
    require_unique,
)
from modelplane.api.status import InferenceClusterStatus, SpecStatus
from modelplane.api.gateway import GatewayAuth
from modelplane.api.clouds import CapacityBlock, ClusterSpec, Provisioning, check_aks_pool_name
from modelplane.api.values import QUANTITY_MAX_LENGTH, QUANTITY_PATTERN, SEMVER_PATTERN, check_quantity, check_version

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_attribute_name(key: str) -> str:
    """DRA attribute/capacity names: `name` (the driver's domain) or `domain/name`, where the name
    is a C identifier of at most 32 characters so CEL can read it as `...["domain"].name`."""
    domain, _, name = key.rpartition("/")
    if domain and (len(domain) > 63 or label_key_problem(f"{domain}/x")):
        raise ValueError(f"{key!r} has an invalid domain {domain!r}: use a DNS subdomain of at most 63 characters")
    if len(name) > 32 or not _C_IDENTIFIER.fullmatch(name):
        raise ValueError(f"{key!r} is not a valid attribute name: use a C identifier of at most 32 characters "
                         "(letters, digits, '_'), optionally prefixed by a domain ('nvidia.com/fp8')")
    return key


AttributeName = Annotated[str, AfterValidator(check_attribute_name)]


class Attribute(Model):
    """A typed device attribute: exactly one of string, version (semver), bool, int."""

    string: Annotated[str, Field(max_length=253)] | None = Field(default=None, strict=True)
    """A string value (at most 253 characters)."""
    version: Annotated[Str, AfterValidator(check_version), checked_string(None, SEMVER_PATTERN)] | None = None
    """A semantic version (e.g. 9.0.0); selectors compare it with semver()."""
    bool_: Bool | None = Field(default=None, alias="bool")
    """A boolean value."""
    int_: Annotated[int, Field(strict=True)] | None = Field(default=None, alias="int")
    """An integer value."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Attribute:
        if sum(value is not None for value in (self.string, self.version, self.bool_, self.int_)) != 1:
            raise ValueError("an attribute sets exactly one of string, version, bool, int")
        return self

    @property
    def value(self) -> str | bool | int:
        for value in (self.string, self.version, self.bool_, self.int_):
            if value is not None:
                return value
        raise AssertionError("validated: exactly one value is set")


class Capacity(Model):
    value: Annotated[Str, AfterValidator(check_quantity), checked_string(QUANTITY_MAX_LENGTH, QUANTITY_PATTERN)]
    """A Kubernetes quantity (e.g. 81559Mi, 80Gi); selectors compare it with quantity()."""


class ClassDevice(Model):
    """One kind of device on a node of the class, as a DRA driver would publish it."""

    name: DNSLabel
    """Identifies the device within the class (a DNS label)."""
    claim: Claim = Claim.DRA
    """DRA: pods claim the device through the DRA DeviceClass deviceClassName. Synthetic: selectors match it but it is
    never claimed (hardware without a DRA driver). Defaults to DRA."""
    driver: Annotated[DNSSubdomain, Field(max_length=63)]
    """The DRA driver that publishes the device (e.g. gpu.nvidia.com); selectors read it as device.driver."""
    device_class_name: DNSSubdomain | None = None
    """The DRA DeviceClass pods claim the device through (e.g. gpu.nvidia.com); required when claim is DRA."""
    count: bounded(1, 64) = 1
    """How many of this device each node of the class has. Defaults to 1."""
    attributes: Annotated[dict[AttributeName, Attribute], Field(max_length=32)] = Field(default_factory=dict)
    """Typed attributes by name (`name` in the driver's domain, or `domain/name`), read by selectors as
    device.attributes["<domain>"].<name>; at most 32."""
    capacity: Annotated[dict[AttributeName, Capacity], Field(max_length=32)] = Field(default_factory=dict)
    """Capacity quantities by name (as for attributes), read by selectors as device.capacity["<domain>"].<name>; at
    most 32."""

    @model_validator(mode="after")
    def _dra_needs_device_class(self) -> ClassDevice:
        if self.claim is Claim.DRA and self.device_class_name is None:
            raise FieldError(("deviceClassName",),
                             "deviceClassName is required when claim is DRA: it names the DRA DeviceClass "
                             "the pods claim this device through (e.g. gpu.nvidia.com); use claim: Synthetic "
                             "for hardware without a DRA driver")
        return self


_PRICE = re.compile(r"^[0-9]{1,9}(\.[0-9]{1,6})?$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


def check_price(value: object) -> object:
    """A decimal string: a YAML number would be read as a binary float (and lose digits)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"write the price as a decimal string, perNodeHour: \"{value}\" (a YAML number is read as "
                         "a binary float)")
    if isinstance(value, str) and not _PRICE.fullmatch(value):
        raise ValueError(f"{value!r} is not a price: use a decimal string of at most 9 digits before and 6 after "
                         "the point, such as \"3.67\" (the amount per node per hour, not negative)")
    return value


def check_currency(value: str) -> str:
    if not _CURRENCY.fullmatch(value):
        raise ValueError(f"{value!r} is not an ISO 4217 currency code: use three capital letters, such as USD or EUR")
    return value


class Pricing(Model):
    """What one node of the class costs; `plan` adds it up per deployment, cluster and fleet."""

    per_node_hour: Annotated[Str, BeforeValidator(check_price), checked_string(16, _PRICE.pattern)]
    """The price of one node for one hour, as a decimal string (e.g. "40.96")."""
    currency: Annotated[Str, AfterValidator(check_currency), checked_string(3, _CURRENCY.pattern)] = "USD"
    """The ISO 4217 code of the price's currency. Defaults to USD."""

    @property
    def amount(self) -> Decimal:
        return Decimal(self.per_node_hour)


class InferenceClassSpec(Model):
    description: Str | None = None
    """Free text for people: what the hardware is."""
    devices: Annotated[tuple[ClassDevice, ...], Field(min_length=1, max_length=16)]
    """The devices one node of the class has, as a DRA driver would publish them (1-16, unique names)."""
    provisioning: Provisioning | None = None
    """How a node of the class is created on a cloud (machine shape, accelerator); required for the pools of
    provisioned clusters, unused on Existing ones."""
    pricing: Pricing | None = None
    """What a node of the class costs per hour; without it the class's nodes are shown as unpriced."""

    @field_validator("devices")
    @classmethod
    def _unique_devices(cls, devices: tuple[ClassDevice, ...]) -> tuple[ClassDevice, ...]:
        require_unique(devices, "name", "device name")
        return devices


class InferenceClass(Named, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["InferenceClass"] = "InferenceClass"
    metadata: ObjectMeta
    spec: InferenceClassSpec
    status: SpecStatus | None = None
    """Whether the last run planned with this spec, as the control plane last wrote it; accepted as input and ignored."""

def check_taint_key(key: str) -> str:
    problem = label_key_problem(key)
    if problem:
        raise ValueError(problem.replace("label key", "taint key"))
    return key


class Taint(Model):
    key: Annotated[Str, AfterValidator(check_taint_key), checked_string(LABEL_KEY_MAX, LABEL_KEY_PATTERN)]
    """The taint key (a label key)."""
    value: Annotated[Str, Field(max_length=63)] | None = None
    """The taint value; optional."""
    effect: TaintEffect
    """NoSchedule keeps new replicas off the cluster; NoExecute also moves its existing replicas elsewhere."""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class InfiniBand(Model):
    fabric: Annotated[Str, Field(min_length=1, max_length=63)]
    """The InfiniBand fabric the pool's nodes are on; the pools of one gang must share it."""


class Fabric(Model):
    type: FabricType = FabricType.NONE
    """How the pool's nodes are interconnected: None, EFA or InfiniBand. An engine's members split across pools only
    within one fabric. Defaults to None."""
    infiniband: InfiniBand | None = None
    """The InfiniBand fabric; only with type InfiniBand (required on Nebius)."""

    @model_validator(mode="after")
    def _infiniband_only_for_infiniband(self) -> Fabric:
        if self.infiniband is not None and self.type is not FabricType.INFINIBAND:
            raise FieldError(("infiniband",), f"infiniband is only allowed when type is InfiniBand, not {self.type}")
        return self

    @property
    def identity(self) -> str:
        """What must be equal for two pools to share a gang: the type and the InfiniBand fabric id."""
        if self.infiniband is not None:
            return f"{self.type}/{self.infiniband.fabric}"
        return str(self.type)


def check_pool_name(name: str) -> str:
    check_dns_label(name)
    if len(name) > 40:
        raise ValueError(f"{name!r} is too long for a node pool name: GKE allows at most 40 characters")
    return name


PoolName = Annotated[Str, AfterValidator(check_pool_name), checked_string(40, DNS_LABEL_PATTERN)]


class Sharing(StrEnum):
    SHARED = "Shared"
    EXCLUSIVE = "Exclusive"


class DeletionPolicy(StrEnum):
    """What happens to a provisioned cluster when its InferenceCluster is removed (Crossplane's words)."""

    DELETE = "Delete"
    ORPHAN = "Orphan"


class NodePool(Model):
    name: PoolName
    """The `modelplane.ai/pool` node label value; at most 40 characters (GKE's node pool limit)."""
    class_name: DNSSubdomain
    """The InferenceClass that describes one node of the pool."""
    node_count: bounded(0, 10000) = 1
    """Nodes the pool has (or starts with); what the scheduler fills when maxNodeCount is unset. Defaults to 1."""
    min_node_count: bounded(0, 10000) | None = None
    """Autoscaling lower bound; at most nodeCount."""
    max_node_count: bounded(1, 10000) | None = None
    """Autoscaling upper bound; when set, the scheduler fills the pool up to it."""
    zones: tuple[NonEmptyStr, ...] = ()
    """The zones the pool's nodes run in; empty means the cloud's default."""
    fabric: Fabric = Fabric()
    """How the pool's nodes are interconnected."""
    capacity_block: CapacityBlock | None = None
    """EKS only: the EC2 Capacity Block for ML the pool's nodes run in; its one zone is the pool's."""
    sharing: Sharing = Sharing.SHARED
    """Shared: pods that claim part of a node's devices (1 of 8 GPUs) share nodes, packed only as tightly as any
    choice of nodes by the cluster's scheduler still places every pod; gang pods and pods that claim every device of
    a kind keep whole nodes. Exclusive: every pod that claims a device holds a whole node. Defaults to Shared."""
    zero_downtime_rollouts: Bool = False
    """Keep room on the pool for one more pod of every size placed on it, so each Standalone engine there rolls out
    by starting a new pod before stopping an old one (maxSurge 1, maxUnavailable 0). Costs up to a node of headroom
    per pod size. Gang engines still replace one group at a time. Defaults to false: one copy at a time, no room kept."""

    @model_validator(mode="after")
    def _counts_ordered(self) -> NodePool:
        low, high = self.min_node_count, self.max_node_count
        if low is not None and high is not None and low > high:
            raise FieldError(("minNodeCount",), f"minNodeCount {low} is above maxNodeCount {high}")
        if high is not None and self.node_count > high:
            raise FieldError(("nodeCount",), f"nodeCount {self.node_count} is above maxNodeCount {high}")
        if low is not None and self.node_count < low:
            raise FieldError(("nodeCount",), f"nodeCount {self.node_count} is below minNodeCount {low}")
        return self

    @property
    def capacity(self) -> int:
        """Nodes the scheduler may fill: `maxNodeCount` when the pool autoscales, else `nodeCount`."""
        return self.max_node_count if self.max_node_count is not None else self.node_count


class ServingStack(StrEnum):
    """What runs a cluster's gangs: Standard (LeaderWorkerSet, kube-scheduler) or Dynamo (Grove, KAI, ModelExpress)."""

    STANDARD = "Standard"
    DYNAMO = "Dynamo"


class ClusterGateway(Model):
    """The cluster's inference Gateway, where every replica on the cluster is reached. It authenticates its callers
    one way or is open on purpose (`api.refs.unauthenticated_cluster_gateways`): the fleet gateway's client
    certificate when an InferenceGateway reaches the clusters over mutual TLS, `auth` in a fleet without an
    InferenceGateway (callers reach the cluster's gateway directly), or `publicInference: true`."""

    public_inference: Bool = False
    """Let anyone who reaches this cluster's inference Gateway call every model on it, without authentication
    (a warning says so). Defaults to false."""
    auth: GatewayAuth | None = None
    """Require an API key on every request to this cluster's inference Gateway (Envoy Gateway's SecurityPolicy
    apiKeyAuth, the key removed before the request reaches an engine): for fleets without an InferenceGateway, whose
    callers reach the clusters' gateways directly. With an InferenceGateway the fleet gateway authenticates the hop
    (`clusterTLS.clientCertificateSecret`) instead."""

    @model_validator(mode="after")
    def _open_or_authenticated(self) -> ClusterGateway:
        if self.public_inference and self.auth is not None:
            raise FieldError(("auth",), "auth contradicts publicInference: true; remove one of them")
        return self


class InferenceClusterSpec(Model):
    cluster: ClusterSpec
    """Where the cluster runs: `source` picks the cloud block (gke, eks, aks, nebius, vultr) or existing."""
    taints: tuple[Taint, ...] = ()
    """Taints on the whole cluster, which deployments must tolerate (NoSchedule keeps new replicas off, NoExecute
    drains existing ones); a key appears once per effect."""
    node_pools: Annotated[tuple[NodePool, ...], Field(min_length=1, max_length=16)]
    """The cluster's GPU node pools (1-16, unique names), each naming the InferenceClass of its nodes."""
    deletion_policy: DeletionPolicy = DeletionPolicy.DELETE
    """When the InferenceCluster is removed: `Delete` (the default) deletes the cloud cluster, its node pools
    and network; `Orphan` leaves them running and forgets them (Pulumi's retainOnDelete), and switches on the
    cloud's own deletion protection where it has one (GKE, EKS). No effect on an Existing cluster."""
    outage_grace_period_seconds: bounded(0, 86400) = 600
    """In control-cluster mode, how long the cluster may stay unreachable, or without a Ready node, before its replicas
    are re-placed on other clusters (make-before-break); shorter outages move nothing, and replicas never move back
    on their own. Defaults to 600 (10 minutes)."""
    stack: ServingStack = ServingStack.STANDARD
    """The serving stack. Standard: a Leader + Worker engine is a LeaderWorkerSet, pods use the default scheduler.
    Dynamo: it is a Grove PodCliqueSet, every engine pod is scheduled by the KAI scheduler, and a ModelExpress server
    runs on the cluster (docs/dynamo.md). Immutable once set: changing it would replace every gang on the cluster.
    Defaults to Standard."""

    gateway: ClusterGateway | None = None
    """The cluster's inference Gateway: `auth` (API keys) or `publicInference: true` (open to everyone)."""

    @property
    def public_inference(self) -> bool:
        return self.gateway is not None and self.gateway.public_inference

    @field_validator("taints")
    @classmethod
    def _unique_taints(cls, taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
        seen: dict[tuple[str, str], int] = {}
        for index, taint in enumerate(taints):
            key = (taint.key, str(taint.effect))
            if key in seen:
                raise FieldError((index,), f"duplicate taint {taint.key}:{taint.effect} (also at index "
                                           f"{seen[key]}); a key may appear once per effect")
            seen[key] = index
        return taints

    @field_validator("node_pools")
    @classmethod
    def _unique_pools(cls, pools: tuple[NodePool, ...]) -> tuple[NodePool, ...]:
        require_unique(pools, "name", "pool name")
        return pools

    @model_validator(mode="after")
    def _pools_fit_the_cloud(self) -> InferenceClusterSpec:
        source = self.cluster.source
        for index, pool in enumerate(self.node_pools):
            if source is ClusterSource.AKS:
                try:
                    check_aks_pool_name(pool.name)
                except ValueError as error:
                    raise FieldError(("nodePools", index, "name"), str(error)) from None
            if pool.capacity_block is not None and source is not ClusterSource.EKS:
                raise FieldError(("nodePools", index, "capacityBlock"),
                                 f"capacityBlock is for EKS clusters (EC2 Capacity Blocks for ML), not source {source}")
            if pool.capacity_block is not None and len(pool.zones) != 1:
                raise FieldError(("nodePools", index, "zones"),
                                 "a Capacity Block is reserved in one Availability Zone: list that zone, and "
                                 f"only it, in zones (got {len(pool.zones)})")
            if (source is ClusterSource.NEBIUS and pool.fabric.type is FabricType.INFINIBAND
                    and pool.fabric.infiniband is None):
                raise FieldError(("nodePools", index, "fabric", "infiniband"),
                                 "infiniband.fabric is required when fabric.type is InfiniBand on Nebius: it names "
                                 "the fabric the pool's GPU cluster joins (e.g. fabric-2)")
        return self


def check_cluster_name(name: str) -> str:
    check_dns_label(name)
    if len(name) > 40 or not name[0].isalpha():
        raise ValueError(f"{name!r} cannot name a cluster: GKE and EKS need at most 40 characters, "
                         "starting with a letter")
    return name


ClusterName = Annotated[Str, AfterValidator(check_cluster_name), checked_string(40, r"^[a-z]([-a-z0-9]*[a-z0-9])?$")]


class ClusterMeta(ObjectMeta):
    """An InferenceCluster's name is also a GKE/EKS cluster name: a DNS label of at most 40
    characters that starts with a letter."""

    name: ClusterName


class InferenceCluster(Named, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["InferenceCluster"] = "InferenceCluster"
    metadata: ClusterMeta
    spec: InferenceClusterSpec
    status: InferenceClusterStatus | None = None
    """What the control plane last observed of the cluster; written back in control-cluster mode."""

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    def pool(self, name: str) -> NodePool | None:
        return next((pool for pool in self.spec.node_pools if pool.name == name), None)
