"""What a cluster's DRA drivers really publish: ResourceSlices (and Nodes, for their pools) read
into devices per node, and grouped into the InferenceClass `devices` block those nodes amount to.

Input is plain data, as `kubectl get nodes,resourceslices,deviceclasses -o yaml` or the API gives
it: documents or `List`s of `ResourceSlice` (resource.k8s.io v1, v1beta2, or v1beta1 with its
`basic` wrapper), `Node` and `DeviceClass` objects. `read_published(documents, source)` returns a
`Published` or raises `SliceError` with every problem, each naming the source, the object and the
field.

Rules (Kubernetes' own, k8s.io/dynamic-resource-allocation structured/pools.go and the
resource.k8s.io types):
- Only node-local slices (`spec.nodeName`) describe a node's devices; a slice for network-attached
  devices (`nodeSelector`, `allNodes`, `perDeviceNodeSelection`) is left out and counted.
- Of one driver's pool, only the slices of the highest `pool.generation` count: older ones are
  stale leftovers the allocator ignores too.
- A bare attribute or capacity name is in the driver's domain; `domain/name` in that domain.

Grouping into a class (`class_devices`): the attributes that tell one device from its siblings are
left out of the class (they cannot be a class's: every device has its own): the identities the
NVIDIA and Kubernetes helpers publish (`IDENTITY`), and any attribute whose value differs between
devices of one driver on one node. The remaining view (driver, attributes, capacity by exact value)
groups identical devices; a node's shape is its groups with their counts, and nodes of one pool
with different shapes are reported as such, never averaged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelplane.api.labels import POOL
from modelplane.cel.quantity import QuantityError, parse_quantity

IDENTITY = frozenset({"uuid", "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot", "pcieBusID",
                      "minor", "index"})
"""Per-device identities (dra-driver-nvidia-gpu's `uuid`, and `index`, `minor`, `pcieBusID` before
v25.8; the PCI address and root from k8s.io/dynamic-resource-allocation/deviceattribute), never part
of a class."""

RESOURCE_GROUP = "resource.k8s.io"
_ATTRIBUTE_KINDS = ("string", "version", "bool", "int")
_SLICE_VERSIONS = ("v1", "v1beta2", "v1beta1")


class SliceError(ValueError):
    """Input that is not what the API serves; `problems` names each (source, object, field)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a slice, as a selector sees it."""

    name: str
    driver: str
    attributes: tuple[tuple[str, str, Any], ...]
    """(name as published, kind, value), sorted; kind is string | version | bool | int."""
    capacity: tuple[tuple[str, str], ...]
    """(name as published, quantity text), sorted."""

    def class_view(self, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The device in the InferenceClass device shape (no name, count or deviceClassName)."""
        return {"driver": self.driver,
                "attributes": {k: {kind: value} for k, kind, value in self.attributes if k not in leave_out},
                "capacity": {k: {"value": text} for k, text in self.capacity}}

    def shape(self, leave_out: frozenset[str]) -> tuple[Any, ...]:
        """What makes two devices the same kind: the driver, the kept attributes, capacity by value."""
        return (self.driver, tuple(a for a in self.attributes if a[0] not in leave_out),
                tuple((k, parse_quantity(text).amount) for k, text in self.capacity))


@dataclass(frozen=True)
class PublishedNode:
    name: str
    pool: str | None
    """The node's `modelplane.ai/pool` label; None when the input has no Node object for it."""
    devices: tuple[PublishedDevice, ...]


@dataclass(frozen=True)
class DeviceClassInfo:
    name: str
    selectors: tuple[str, ...]


@dataclass(frozen=True)
class Published:
    nodes: tuple[PublishedNode, ...]
    """Nodes with at least one node-local device, by name."""
    device_classes: tuple[DeviceClassInfo, ...] = ()
    skipped_slices: int = 0
    """Slices of network-attached devices (no `nodeName`), left out."""
    node_objects: bool = False
    """Whether the input had Node objects (so a node without the pool label is known to have none)."""

    def pools(self) -> dict[str, tuple[PublishedNode, ...]]:
        by_pool: dict[str, list[PublishedNode]] = {}
        for node in self.nodes:
            if node.pool is not None:
                by_pool.setdefault(node.pool, []).append(node)
        return {pool: tuple(nodes) for pool, nodes in sorted(by_pool.items())}


@dataclass(frozen=True)
class DeviceGroup:
    """Identical devices on each node of a group of nodes."""

    name: str
    count: int
    view: dict[str, Any] = field(compare=False)


@dataclass(frozen=True)
class NodeGroup:
    """Nodes that publish the same devices (one pool, or, without pool labels, one shape)."""

    pool: str | None
    nodes: tuple[str, ...]
    devices: tuple[DeviceGroup, ...]
    left_out: tuple[str, ...]
    """Attributes left out as per-device identities, sorted."""


def read_published(documents: Iterable[Any], source: str) -> Published:
    problems: list[str] = []
    slices: list[tuple[str, dict[str, Any]]] = []
    labels: dict[str, dict[str, str]] = {}
    classes: list[DeviceClassInfo] = []
    node_objects = False
    for index, obj in enumerate(_flatten(documents, source, problems)):
        kind, api_version = obj.get("kind"), str(obj.get("apiVersion", ""))
        name = str((obj.get("metadata") or {}).get("name", f"#{index + 1}"))
        if kind == "ResourceSlice" and _is_resource(api_version):
            slices.append((name, obj))
        elif kind == "Node" and api_version == "v1":
            node_objects = True
            labels[name] = dict((obj.get("metadata") or {}).get("labels") or {})
        elif kind == "DeviceClass" and _is_resource(api_version):
            selectors = ((obj.get("spec") or {}).get("selectors")) or []
            classes.append(DeviceClassInfo(name, tuple(str((s.get("cel") or {}).get("expression", ""))
                                                        for s in selectors)))
        else:
            problems.append(f"{source}: {kind or 'an object'} {name} ({api_version or 'no apiVersion'}): not a "
                            f"ResourceSlice, Node or DeviceClass; write the file with "
                            f"`kubectl get nodes,resourceslices,deviceclasses -o yaml`")
    devices, skipped = _node_devices(slices, source, problems)
    if problems:
        raise SliceError(problems)
    nodes = tuple(PublishedNode(name, labels.get(name, {}).get(POOL), tuple(found))
                  for name, found in sorted(devices.items()))
    return Published(nodes, tuple(sorted(classes, key=lambda c: c.name)), skipped, node_objects)


def _is_resource(api_version: str) -> bool:
    group, _, version = api_version.partition("/")
    return group == RESOURCE_GROUP and version in _SLICE_VERSIONS


def _flatten(documents: Iterable[Any], source: str, problems: list[str]) -> Iterable[dict[str, Any]]:
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, Mapping):
            problems.append(f"{source}: a document is a {type(document).__name__}, not a Kubernetes object")
        elif str(document.get("kind", "")).endswith("List") and "items" in document:
            yield from _flatten(document.get("items") or [], source, problems)
        else:
            yield dict(document)


def _node_devices(slices: list[tuple[str, dict[str, Any]]], source: str, problems: list[str]
                  ) -> tuple[dict[str, list[PublishedDevice]], int]:
    newest: dict[tuple[str, str], int] = {}
    for _, obj in slices:
        spec = obj.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("driver")), str(pool.get("name")))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    devices: dict[str, list[PublishedDevice]] = {}
    skipped = 0
    for name, obj in sorted(slices, key=lambda s: s[0]):
        spec = obj.get("spec") or {}
        where = f"{source}: ResourceSlice {name}"
        driver, node = spec.get("driver"), spec.get("nodeName")
        if not isinstance(driver, str) or not driver:
            problems.append(f"{where}: spec.driver: missing; a slice names the driver that publishes it")
            continue
        if not node:
            skipped += 1
            continue
        pool = spec.get("pool") or {}
        if int(pool.get("generation") or 0) < newest[(driver, str(pool.get("name")))]:
            continue
        for at, device in enumerate(spec.get("devices") or []):
            found = _device(device, driver, f"{where}: spec.devices[{at}]", problems)
            if found is not None:
                devices.setdefault(str(node), []).append(found)
    return devices, skipped


def _device(device: Any, driver: str, where: str, problems: list[str]) -> PublishedDevice | None:
    if not isinstance(device, Mapping):
        problems.append(f"{where}: not a device object")
        return None
    body = device.get("basic") if isinstance(device.get("basic"), Mapping) else device  # v1beta1
    attributes = []
    for key, attribute in sorted((body.get("attributes") or {}).items()):
        kinds = [kind for kind in _ATTRIBUTE_KINDS if isinstance(attribute, Mapping) and kind in attribute]
        if len(kinds) != 1:
            problems.append(f"{where}.attributes.{key}: sets {len(kinds)} of {', '.join(_ATTRIBUTE_KINDS)}; "
                            "an attribute has exactly one")
            continue
        attributes.append((str(key), kinds[0], attribute[kinds[0]]))
    capacity = []
    for key, entry in sorted((body.get("capacity") or {}).items()):
        text = str(entry.get("value") if isinstance(entry, Mapping) else entry)
        try:
            parse_quantity(text)
        except QuantityError as error:
            problems.append(f"{where}.capacity.{key}: {text!r} is not a quantity ({error})")
            continue
        capacity.append((str(key), text))
    return PublishedDevice(str(device.get("name", "")), driver, tuple(attributes), tuple(capacity))


def per_device(nodes: Iterable[PublishedNode]) -> frozenset[str]:
    """The attributes that tell devices apart: `IDENTITY`, and any that is not the same (or the
    same absence) on every device of one driver on one node."""
    varying = set(IDENTITY)
    for node in nodes:
        by_driver: dict[str, list[dict[str, Any]]] = {}
        for device in node.devices:
            by_driver.setdefault(device.driver, []).append({k: (kind, v) for k, kind, v in device.attributes})
        for devices in by_driver.values():
            for key in {k for d in devices for k in d}:
                if len({d.get(key) for d in devices}) > 1:
                    varying.add(key)
    return frozenset(varying)


def node_groups(published: Published, by_pool: bool = True) -> tuple[NodeGroup, ...]:
    """Nodes grouped by pool (when the input tells pools) and, within, by identical devices."""
    leave_out = per_device(published.nodes)
    grouped: dict[tuple[str | None, tuple[Any, ...]], list[PublishedNode]] = {}
    groups: dict[tuple[str | None, tuple[Any, ...]], tuple[DeviceGroup, ...]] = {}
    for node in published.nodes:
        shape, devices = _node_shape(node, leave_out)
        key = (node.pool if by_pool else None, shape)
        grouped.setdefault(key, []).append(node)
        groups.setdefault(key, devices)
    ordered = sorted(grouped, key=lambda k: (k[0] or "", grouped[k][0].name))
    return tuple(NodeGroup(key[0], tuple(n.name for n in grouped[key]), groups[key],
                           tuple(sorted(leave_out & _published_names(grouped[key])))) for key in ordered)


def _published_names(nodes: Iterable[PublishedNode]) -> set[str]:
    return {a[0] for node in nodes for device in node.devices for a in device.attributes}


def _node_shape(node: PublishedNode, leave_out: frozenset[str]) -> tuple[tuple[Any, ...], tuple[DeviceGroup, ...]]:
    counts: dict[tuple[Any, ...], int] = {}
    first: dict[tuple[Any, ...], PublishedDevice] = {}
    for device in node.devices:
        shape = device.shape(leave_out)
        counts[shape] = counts.get(shape, 0) + 1
        first.setdefault(shape, device)
    ordered = sorted(counts, key=lambda s: (s[0], first[s].name))
    names: dict[str, int] = {}
    devices = []
    for shape in ordered:
        base = _base_name(first[shape].name)
        names[base] = names.get(base, 0) + 1
        name = base if names[base] == 1 else f"{base}-{names[base]}"
        devices.append(DeviceGroup(name, counts[shape], first[shape].class_view(leave_out)))
    return tuple((s, counts[s]) for s in ordered), tuple(devices)


def _base_name(device_name: str) -> str:
    """`gpu-0` -> `gpu`: the driver's device name without its per-device number (a DNS label)."""
    base = device_name.rstrip("0123456789").rstrip("-") or "device"
    return base.lower()[:63]
