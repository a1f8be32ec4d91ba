"""An immutable view of the fleet for one planning run: clusters, their pools, the pools' devices.

Built once per `place()` from the validated `Fleet`: each class device becomes a `cel.Device`
once (identical devices of different classes compare equal, so CEL work is shared), and each pool
knows its class, its capacity in nodes, its fabric identity, whether its nodes may be shared, the
DRA device kinds its pods claim from (`kinds`, `per_node`) and its class's price. Clusters are
sorted by name and numbered in that order (`position`); pools keep the order the platform team
declared (`order`, the last tie-break of the pool score). `with_class` indexes the clusters by the
classes of their pools, so a deployment looks only at clusters that have hardware it can use; the
other indexes are built on first use, each once per snapshot: the clusters by label and by taints
(the Clusters rule, `Run.eligible`), the groups of clusters alike in both (`Briefing._refused`), and
each distinct device with the classes that publish it (`Matcher.usable_classes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from modelplane.api import Claim, ClassDevice, Fleet, InferenceCluster, Taint
from modelplane.api.fleet import Pricing, Sharing
from modelplane.cel import Device
from modelplane.cel.quantity import parse_quantity
from modelplane.scheduling.packing import Sizes


@dataclass(frozen=True)
class DeviceView:
    name: str
    claim: Claim
    device_class_name: str | None
    count: int
    device: Device
    memory: Decimal
    """Bytes of the device's `memory` capacity (in any domain); 0 when it publishes none."""

    @classmethod
    def of(cls, device: ClassDevice, interned: dict[Device, Device]) -> DeviceView:
        """`interned` makes equal CEL devices of different classes one object, so per-run memos
        keyed by object identity share their work."""
        view = Device.from_class_device(device.model_dump(by_alias=True, exclude_none=True))
        memory = next((parse_quantity(c.value).amount for key, c in sorted(device.capacity.items())
                       if key.rpartition("/")[2] == "memory"), Decimal(0))
        return cls(device.name, device.claim, device.device_class_name, device.count, interned.setdefault(view, view),
                   memory)


@dataclass(frozen=True)
class PoolView:
    cluster: str
    name: str
    class_name: str
    capacity: int
    fabric: str
    devices: tuple[DeviceView, ...]
    shared: bool
    """Whether pods that claim part of a node may share nodes (`sharing: Shared`)."""
    order: int
    """The pool's place in its cluster's list."""
    surge: bool
    """Whether the pool keeps room for a rollout's surge pod (`zeroDowntimeRollouts`)."""
    pricing: Pricing | None

    @property
    def key(self) -> tuple[str, str]:
        return self.cluster, self.name

    @cached_property
    def kinds(self) -> tuple[DeviceView, ...]:
        """The devices pods claim through DRA, the kinds a pod's `Sizes` count."""
        return tuple(device for device in self.devices if device.claim is Claim.DRA)

    @cached_property
    def per_node(self) -> Sizes:
        return tuple(device.count for device in self.kinds)


@dataclass(frozen=True)
class ClusterView:
    name: str
    position: int
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    pools: tuple[PoolView, ...]

    @cached_property
    def class_names(self) -> frozenset[str]:
        return frozenset(pool.class_name for pool in self.pools)

    @cached_property
    def pool_classes(self) -> tuple[str, ...]:
        """Each pool's class, in pool order."""
        return tuple(pool.class_name for pool in self.pools)

    @cached_property
    def first_pools(self) -> dict[str, tuple[str, PoolView]]:
        """Per class, its pool first by `cluster/pool` (how explain ranks places), with that text."""
        found: dict[str, tuple[str, PoolView]] = {}
        for pool in self.pools:
            where = f"{self.name}/{pool.name}"
            if pool.class_name not in found or where < found[pool.class_name][0]:
                found[pool.class_name] = (where, pool)
        return found

    @cached_property
    def _pools(self) -> dict[str, PoolView]:
        return {pool.name: pool for pool in self.pools}

    def pool(self, name: str) -> PoolView | None:
        return self._pools.get(name)


@dataclass(frozen=True)
class Snapshot:
    clusters: tuple[ClusterView, ...]
    classes: dict[str, tuple[DeviceView, ...]]
    """Each class's devices, shared by every pool of the class."""
    with_class: dict[str, frozenset[int]] = field(init=False)
    """Per class, the positions of the clusters that have a pool of it."""
    position: dict[str, int] = field(init=False)
    """Each cluster's position, by name."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {cluster.name: cluster for cluster in self.clusters})
        object.__setattr__(self, "position", {cluster.name: cluster.position for cluster in self.clusters})
        with_class: dict[str, set[int]] = {}
        for cluster in self.clusters:
            for name in cluster.class_names:
                with_class.setdefault(name, set()).add(cluster.position)
        object.__setattr__(self, "with_class", {name: frozenset(found) for name, found in with_class.items()})

    def cluster(self, name: str) -> ClusterView | None:
        return self._by_name.get(name)  # type: ignore[attr-defined]

    @cached_property
    def by_label(self) -> dict[tuple[str, str] | None, frozenset[int]]:
        """Per (label, value), the positions of the clusters that carry it; every cluster under None."""
        index: dict[tuple[str, str] | None, set[int]] = {None: set()}
        for cluster in self.clusters:
            index[None].add(cluster.position)
            for label in cluster.labels.items():
                index.setdefault(label, set()).add(cluster.position)
        return {label: frozenset(positions) for label, positions in index.items()}

    @cached_property
    def by_taints(self) -> dict[tuple[Taint, ...], tuple[ClusterView, frozenset[int]]]:
        """Per distinct list of taints: a cluster that has it and the positions of all that do."""
        index: dict[tuple[Taint, ...], tuple[ClusterView, set[int]]] = {}
        for cluster in self.clusters:
            index.setdefault(cluster.taints, (cluster, set()))[1].add(cluster.position)
        return {taints: (sample, frozenset(positions)) for taints, (sample, positions) in index.items()}

    @cached_property
    def alike(self) -> tuple[tuple[ClusterView, ...], ...]:
        """The clusters that carry the same labels and taints, each group by name: the Clusters rule,
        which reads only those, answers alike for a group (`Briefing._refused`)."""
        groups: dict[tuple[tuple[tuple[str, str], ...], tuple[Taint, ...]], list[ClusterView]] = {}
        for cluster in self.clusters:
            groups.setdefault((tuple(sorted(cluster.labels.items())), cluster.taints), []).append(cluster)
        return tuple(tuple(sorted(group, key=lambda cluster: cluster.name)) for group in groups.values())

    @cached_property
    def publishers(self) -> tuple[tuple[DeviceView, tuple[tuple[str, DeviceView], ...]], ...]:
        """Each distinct CEL device of the classes (`of` interns equal ones), with the class devices
        that publish it, so that a selector list is asked once per distinct device instead of once per
        class device (the benchmark's 50 classes publish 80 devices, 22 distinct, in the varied shape;
        at 1,000 x 10,000, 11,463 selector lists: a cold place's fill 5.2 -> 4.7 CPU s, standard 5.3 ->
        5.1, A/B in one session, pinned; `Matcher.usable_classes`)."""
        index: dict[int, tuple[DeviceView, list[tuple[str, DeviceView]]]] = {}
        for name, devices in self.classes.items():
            for device in devices:
                index.setdefault(id(device.device), (device, []))[1].append((name, device))
        return tuple((sample, tuple(publishers)) for sample, publishers in index.values())

    @cached_property
    def pool_list(self) -> tuple[tuple[tuple[str, str], int, Sizes, bool], ...]:
        """Every pool's key, capacity, devices per node and surge, what a ledger starts from (the
        capacity search starts thousands of ledgers on one snapshot)."""
        return tuple((pool.key, pool.capacity, pool.per_node, pool.surge) for cluster in self.clusters
                     for pool in cluster.pools)

    @classmethod
    def of(cls, fleet: Fleet) -> Snapshot:
        interned: dict[Device, Device] = {}
        devices = {c.name: tuple(DeviceView.of(d, interned) for d in c.spec.devices) for c in fleet.classes}
        pricing = {c.name: c.spec.pricing for c in fleet.classes}
        return cls(tuple(_cluster_view(cluster, position, devices, pricing)
                         for position, cluster in enumerate(fleet.clusters)), devices)


def _cluster_view(cluster: InferenceCluster, position: int, devices: dict[str, tuple[DeviceView, ...]],
                  pricing: dict[str, Pricing | None]) -> ClusterView:
    pools = tuple(
        PoolView(cluster.name, pool.name, pool.class_name, pool.capacity, pool.fabric.identity,
                 devices.get(pool.class_name, ()), pool.sharing is Sharing.SHARED, order,
                 pool.zero_downtime_rollouts, pricing.get(pool.class_name))
        for order, pool in enumerate(cluster.spec.node_pools))
    return ClusterView(cluster.name, position, dict(cluster.labels), cluster.spec.taints, pools)
