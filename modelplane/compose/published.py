"""Declared against published: where an InferenceClass, or a selector planned on it, differs from
the devices a cluster's DRA drivers really publish (`modelplane.api.slices`).

`published_findings(manifests, cluster, published)` returns warnings (`Finding`s, pointed at the
class device or the selector as written), never errors: the manifests stay valid, but placement
predicts from the class, so where the class is wrong the prediction is wrong too. What is checked,
per pool of the cluster, against the nodes labelled with that pool (all nodes, when the input has
no Node objects and the cluster has one pool):
- each DRA device of the class: that the nodes publish devices of its driver, as many per node
  as `count` says; each declared attribute published with an equal value (an attribute the driver
  does not publish, such as `index` after the NVIDIA driver's v25.8, fails every selector that reads
  it); each declared capacity published with the same exact value (80Gi declared on H100s that
  publish 81559Mi overstates the device);
- each selector of every ModelDeployment request that the declared class satisfies: that a
  published device satisfies it too (the classic: `memory >= 80Gi` on a class that says 80Gi
  matches in the plan and fails on the cluster), with the value it read.
Synthetic devices are not published by any driver and are not checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplane.api import Claim, InferenceClass, InferenceCluster, Manifests
from modelplane.api.fleet import ClassDevice
from modelplane.api.slices import DeviceGroup, NodeGroup, Published, PublishedNode, node_groups
from modelplane.api.workload import DeviceRequest
from modelplane.cel import Device, SelectorEvaluator
from modelplane.cel.quantity import parse_quantity
from modelplane.cel.semver import SemverError, parse_semver
from modelplane.compose.findings import Finding

CODE = "differs-from-cluster"


def pool_nodes(cluster: InferenceCluster, published: Published) -> tuple[dict[str, tuple[PublishedNode, ...]],
                                                                         tuple[str, ...]]:
    """The published nodes of each pool of `cluster`, and the nodes no pool claims."""
    if not published.node_objects and len(cluster.spec.node_pools) == 1:
        return {cluster.spec.node_pools[0].name: published.nodes}, ()
    by_pool = published.pools()
    names = {pool.name for pool in cluster.spec.node_pools}
    unclaimed = tuple(n.name for n in published.nodes if n.pool not in names)
    return {name: nodes for name, nodes in by_pool.items() if name in names}, unclaimed


def published_findings(manifests: Manifests, cluster: InferenceCluster, published: Published,
                       evaluator: SelectorEvaluator | None = None) -> list[Finding]:
    evaluator = evaluator or SelectorEvaluator()
    findings: list[Finding] = []
    by_pool, unclaimed = pool_nodes(cluster, published)
    if unclaimed:
        why = ("carry no modelplane.ai/pool label of this cluster's pools" if published.node_objects else
               "cannot be told apart by pool: the input has no Node objects (write it with `kubectl get "
               "nodes,resourceslices,deviceclasses -o yaml`)")
        findings.append(Finding(cluster, ("spec", "nodePools"), f"{len(unclaimed)} node(s) publishing devices "
                                f"({_names(unclaimed)}) {why}; they were not checked", CODE))
    for index, pool in enumerate(cluster.spec.node_pools):
        nodes = by_pool.get(pool.name, ())
        inference_class = manifests.fleet.inference_class(pool.class_name)
        if inference_class is None:
            continue
        if not nodes:
            if pool.node_count > 0:
                findings.append(Finding(cluster, ("spec", "nodePools", index), f"pool {pool.name}: no node of the "
                                        f"input publishes devices with modelplane.ai/pool={pool.name}; not checked",
                                        CODE))
            continue
        where = f"pool {pool.name} of cluster {cluster.name}"
        groups = node_groups(Published(nodes, published.device_classes, node_objects=True), by_pool=False)
        for at, device in enumerate(inference_class.spec.devices):
            if device.claim is Claim.DRA:
                for group in groups:
                    findings += _device_findings(inference_class, at, device, group, where)
        findings += _selector_findings(manifests, inference_class, groups, where, evaluator)
    return findings


def _device_findings(obj: object, at: int, device: ClassDevice, group: NodeGroup, where: str) -> list[Finding]:
    loc = ("spec", "devices", at)
    nodes = f"{where} ({_names(group.nodes)})"
    same_driver = [g for g in group.devices if g.view["driver"] == device.driver]
    if not same_driver:
        drivers = sorted({g.view["driver"] for g in group.devices})
        return [Finding(obj, (*loc, "driver"), f"the nodes of {nodes} publish no device of driver {device.driver} "
                        f"(they publish: {', '.join(drivers) or 'nothing'})", CODE)]
    findings = []
    published_count = sum(g.count for g in same_driver)
    if published_count != device.count:
        findings.append(Finding(obj, (*loc, "count"), f"{device.count} per node declared; each node of {nodes} "
                                f"publishes {published_count} device(s) of driver {device.driver}", CODE))
    closest = max(same_driver, key=lambda g: (_agreement(device, g), -same_driver.index(g)))
    attributes, capacity = closest.view["attributes"], closest.view["capacity"]
    for key, attribute in sorted(device.attributes.items()):
        declared_kind = next(k for k in ("string", "version", "bool", "int") if _value_of(attribute, k) is not None)
        if key not in attributes:
            findings.append(Finding(obj, (*loc, "attributes", key), f"{key} is not published by driver "
                                    f"{device.driver} on {nodes}: a selector that reads it fails there "
                                    f"(published: {', '.join(sorted(attributes)) or 'none'})", CODE))
            continue
        (kind, value), = attributes[key].items()
        if kind != declared_kind or not _equal(kind, attribute.value, value):
            findings.append(Finding(obj, (*loc, "attributes", key), f"declared {declared_kind} {attribute.value!r}; "
                                    f"{nodes} publishes {kind} {value!r}", CODE))
    for key, entry in sorted(device.capacity.items()):
        if key not in capacity:
            findings.append(Finding(obj, (*loc, "capacity", key), f"{key} is not published by driver {device.driver} "
                                    f"on {nodes} (published: {', '.join(sorted(capacity)) or 'none'})", CODE))
            continue
        declared, real = parse_quantity(entry.value).amount, parse_quantity(capacity[key]["value"]).amount
        if declared != real:
            side = ("more than the devices have: a selector sized to the declared value matches in the plan and "
                    "fails on the cluster" if declared > real else "less than the devices have")
            findings.append(Finding(obj, (*loc, "capacity", key), f"declared {entry.value}; the devices of {nodes} "
                                    f"publish {capacity[key]['value']}, so the class says {side}", CODE))
    return findings


def _selector_findings(manifests: Manifests, inference_class: InferenceClass, groups: tuple[NodeGroup, ...],
                       where: str, evaluator: SelectorEvaluator) -> list[Finding]:
    class_name = inference_class.name
    declared = [(d, Device.from_class_device(d.model_dump(by_alias=True, exclude_none=True)))
                for d in inference_class.spec.devices]
    findings = []
    for deployment in manifests.workloads.deployments:
        for e, engine in enumerate(deployment.spec.engines):
            for m, member in enumerate(engine.members):
                for r, request in enumerate(member.node_selector.devices if member.node_selector else ()):
                    if not any(d.count >= request.count and _satisfies(request, view, evaluator)
                               for d, view in declared):
                        continue
                    loc = ("spec", "engines", e, "members", m, "nodeSelector", "devices", r)
                    for group in groups:
                        miss = _published_miss(request, group, evaluator)
                        if miss is not None:
                            findings.append(Finding(deployment, (*loc, *miss[0]), f"matches class {class_name} as "
                                                    f"declared, but no device the nodes of {where} "
                                                    f"({_names(group.nodes)}) publish does: {miss[1]}", CODE))
    return findings


def _satisfies(request: DeviceRequest, device: Device, evaluator: SelectorEvaluator) -> bool:
    return all(evaluator.evaluate(s.cel, device).matched for s in request.selectors)


def _published_miss(request: DeviceRequest, group: NodeGroup, evaluator: SelectorEvaluator
                    ) -> tuple[tuple[str | int, ...], str] | None:
    """None when a published device kind satisfies the request; else the first failing selector's
    location and reason on the kind that passes the most selectors."""
    best: tuple[int, tuple[str | int, ...], str] | None = None
    for published in group.devices:
        device = Device.from_class_device(published.view)
        failed = [(s, evaluator.evaluate(selector.cel, device)) for s, selector in enumerate(request.selectors)]
        failed = [(s, result) for s, result in failed if not result.matched]
        if not failed and published.count >= request.count:
            return None
        if not failed:
            reason = (("count",), f"{published.count} device(s) {published.name} per node, {request.count} requested")
            candidate = (len(request.selectors), *reason)
        else:
            s, result = failed[0]
            candidate = (len(request.selectors) - len(failed), ("selectors", s, "cel"),
                         f"on {published.name} it {_reason(result.reason)}")
        if best is None or candidate[0] > best[0]:
            best = candidate
    if best is None:
        return ("selectors",), "the nodes publish no devices"
    return best[1], best[2]


def _reason(reason: str | None) -> str:
    text = reason or "did not match"
    return text if not text.startswith("error: ") else f"fails with {text.removeprefix('error: ')}"


def _agreement(device: ClassDevice, group: DeviceGroup) -> int:
    attributes = group.view["attributes"]
    return sum(key in attributes and _equal(next(iter(attributes[key])), attribute.value,
                                            next(iter(attributes[key].values())))
               for key, attribute in device.attributes.items())


def _value_of(attribute: object, kind: str) -> object:
    return getattr(attribute, {"bool": "bool_", "int": "int_"}.get(kind, kind))


def _equal(kind: str, declared: object, published: object) -> bool:
    if kind == "version":
        try:
            return parse_semver(str(declared)) == parse_semver(str(published))
        except SemverError:
            return str(declared) == str(published)
    return declared == published


def _names(names: Iterable[str], most: int = 3) -> str:
    listed = list(names)
    shown = ", ".join(listed[:most])
    return shown + (f" and {len(listed) - most} more" if len(listed) > most else "")
