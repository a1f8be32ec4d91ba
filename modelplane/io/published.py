"""The CLI's side of `modelplane classes` and `validate --against-slices / --kubeconfig`: reading
what a cluster publishes (a `kubectl get nodes,resourceslices,deviceclasses -o yaml` file, or the
cluster itself through a kubeconfig) and printing it. The logic is `modelplane.api.slices`
(grouping) and `modelplane.compose.published` (the comparison); nothing here decides.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from modelplane.api import Manifests, Problem
from modelplane.api.slices import NodeGroup, Published, SliceError, node_groups, read_published
from modelplane.cel import selector_matches


class PublishedInputError(Exception):
    """A slices file or cluster that cannot be read; the message says which and why."""


def from_file(path: str) -> Published:
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise PublishedInputError(f"{path}: cannot read the file: {error.strerror}") from None
    try:
        documents = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError as error:
        raise PublishedInputError(f"{path}: not YAML: {error}") from None
    return _read(documents, path)


def from_cluster(kubeconfig: str | None, context: str | None = None) -> Published:
    """Nodes, ResourceSlices and DeviceClasses as the cluster's API server lists them."""
    from kubernetes import config
    from urllib3.exceptions import HTTPError

    try:
        api = config.new_client_from_config(config_file=kubeconfig, context=context)
    except (config.ConfigException, OSError) as error:
        raise PublishedInputError(f"cannot load a kubeconfig: {error}") from None
    documents = []
    for path, kind, api_version in (("/api/v1/nodes", "Node", "v1"),
                                    ("/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice", "resource.k8s.io/v1"),
                                    ("/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass", "resource.k8s.io/v1")):
        try:
            method, url, headers, _, _ = api.param_serialize("GET", path, header_params={"Accept": "application/json"},
                                                                auth_settings=["BearerToken"])
            response = api.call_api(method, url, header_params=headers, _request_timeout=30)
            data = response.read()
        except HTTPError as error:
            raise PublishedInputError(f"cannot reach {api.configuration.host}: {error}") from None
        if response.status != 200:
            raise PublishedInputError(f"{api.configuration.host}{path}: {response.status} {response.reason}")
        items = json.loads(data).get("items") or []
        documents += [{**item, "kind": kind, "apiVersion": api_version} for item in items]
    return _read(documents, api.configuration.host)


def _read(documents: list[Any], source: str) -> Published:
    try:
        return read_published(documents, source)
    except SliceError as error:
        raise PublishedInputError("\n".join(error.problems)) from None


def classes_text(published: Published) -> str:
    """Each group of nodes with the InferenceClass `devices` block they publish, as YAML documents."""
    if not published.nodes:
        return "# no node-local devices in the input\n"
    documents = []
    for group in node_groups(published):
        head = [f"# {_who(group)} publish these devices"]
        if group.left_out:
            head.append(f"# left out, different on each device: {', '.join(group.left_out)}")
        devices = [_class_device(device.name, device.count, device.view, published) for device in group.devices]
        documents.append("\n".join(head) + "\n" + yaml.safe_dump({"devices": devices}, sort_keys=False, width=120, default_flow_style=None))
    if published.skipped_slices:
        documents[-1] += f"# {published.skipped_slices} slice(s) of network-attached devices (no nodeName) left out\n"
    return "---\n".join(documents)


def _who(group: NodeGroup) -> str:
    nodes = ", ".join(group.nodes)
    what = f"pool {group.pool}: " if group.pool else ""
    return f"{what}{len(group.nodes)} node(s) ({nodes})"


def _class_device(name: str, count: int, view: dict[str, Any], published: Published) -> dict[str, Any]:
    matching = [c.name for c in published.device_classes if all(selector_matches(s, view) for s in c.selectors)]
    device: dict[str, Any] = {"name": name, "driver": view["driver"],
                              "deviceClassName": matching[0] if matching else view["driver"], "count": count}
    if view["attributes"]:
        device["attributes"] = view["attributes"]
    if view["capacity"]:
        device["capacity"] = view["capacity"]
    return device


def against(manifests: Manifests, spec: str, read: str) -> tuple[str, Published]:
    """`[CLUSTER=]SOURCE`: the cluster it describes (the only one when the manifests have one) and
    what it publishes; `read` is "file" or "kubeconfig"."""
    name, equals, source = spec.rpartition("=")
    names = [c.name for c in manifests.fleet.clusters]
    if not equals:
        if len(names) != 1:
            raise PublishedInputError(f"{spec}: name the cluster it describes as CLUSTER={spec} (the manifests "
                                      f"declare {len(names)} clusters: {', '.join(names) or 'none'})")
        name = names[0]
    if name not in names:
        raise PublishedInputError(f"{spec}: no InferenceCluster {name!r} in the manifests (declared: "
                                  f"{', '.join(names) or 'none'})")
    return name, from_file(source) if read == "file" else from_cluster(source)


def findings(manifests: Manifests, cluster: str, published: Published) -> list[Problem]:
    from modelplane.compose.findings import problem
    from modelplane.compose.published import published_findings

    found = manifests.fleet.cluster(cluster)
    if found is None:
        raise PublishedInputError(f"no InferenceCluster {cluster!r} in the manifests")
    return sorted(problem(manifests, finding) for finding in published_findings(manifests, found, published))
