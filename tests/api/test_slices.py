"""Reading what DRA drivers publish (ResourceSlices, Nodes, DeviceClasses) and grouping it into
class devices. Expected values come from the fixtures' provenance (tests/nvidia.py) and Kubernetes'
rules cited in modelplane/api/slices.py."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.slices import SliceError, node_groups, per_device, read_published
from tests.nvidia import DEVICE_CLASS, H100, H200, L4, gpu_device, node, resource_slice

FIXTURE = Path(__file__).parents[1] / "data" / "resourceslices" / "h100-l4.yaml"


def fixture_items() -> list[dict[str, Any]]:
    return [node("gpu-node-a", "h100"), node("gpu-node-b", "h100"), node("gpu-node-c", "l4"),
            resource_slice("gpu-node-a", H100, 8), resource_slice("gpu-node-b", H100, 8),
            resource_slice("gpu-node-c", L4, 1), DEVICE_CLASS]


def test_the_fixture_file_is_what_the_builder_makes() -> None:
    document = yaml.safe_load(FIXTURE.read_text())
    assert document["items"] == fixture_items()


def test_nodes_are_grouped_by_pool_with_identities_left_out() -> None:
    groups = node_groups(read_published(fixture_items(), "test"))
    assert [(g.pool, g.nodes, [(d.name, d.count) for d in g.devices]) for g in groups] == [
        ("h100", ("gpu-node-a", "gpu-node-b"), [("gpu", 8)]), ("l4", ("gpu-node-c",), [("gpu", 1)])]
    h100 = groups[0].devices[0].view
    assert set(h100["attributes"]) == {"type", "productName", "brand", "architecture", "cudaComputeCapability",
                                       "driverVersion", "cudaDriverVersion"}
    assert h100["capacity"] == {"memory": {"value": "81559Mi"}}
    assert groups[0].left_out == ("resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot", "uuid")


def test_without_node_objects_nodes_are_grouped_by_what_they_publish() -> None:
    slices = [resource_slice("a", H100, 8), resource_slice("b", H100, 8), resource_slice("c", H200, 8)]
    groups = node_groups(read_published(slices, "test"))
    assert [(g.pool, g.nodes) for g in groups] == [(None, ("a", "b")), (None, ("c",))]


def test_a_pool_whose_nodes_differ_is_reported_as_two_groups() -> None:
    items = [node("a", "mixed"), node("b", "mixed"), resource_slice("a", H100, 8), resource_slice("b", H100, 4)]
    groups = node_groups(read_published(items, "test"))
    assert [(g.pool, g.nodes, g.devices[0].count) for g in groups] == [("mixed", ("a",), 8), ("mixed", ("b",), 4)]


def test_an_attribute_that_differs_between_sibling_devices_is_per_device() -> None:
    numa = resource_slice("a", H100, 2)
    for minor, device in enumerate(numa["spec"]["devices"]):
        device["attributes"]["resource.kubernetes.io/numaNode"] = {"int": minor}
    published = read_published([numa], "test")
    assert "resource.kubernetes.io/numaNode" in per_device(published.nodes)
    assert [(d.name, d.count) for d in node_groups(published)[0].devices] == [("gpu", 2)]


def test_two_kinds_of_device_on_one_node_are_two_entries() -> None:
    two = resource_slice("a", H100, 2)
    two["spec"]["devices"].append(gpu_device(L4, "a", 2))
    devices = node_groups(read_published([two], "test"))[0].devices
    assert [(d.name, d.count, d.view["capacity"]["memory"]["value"]) for d in devices] == [
        ("gpu", 2, "81559Mi"), ("gpu-2", 1, "23034Mi")]


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old, new = resource_slice("a", L4, 1), resource_slice("a", H100, 8)
    old["metadata"]["name"], new["spec"]["pool"]["generation"] = "a-old", 2
    nodes = read_published([old, new], "test").nodes
    assert [len(n.devices) for n in nodes] == [8]


def test_network_attached_slices_are_left_out_and_counted() -> None:
    network = resource_slice("a", H100, 1)
    del network["spec"]["nodeName"]
    network["spec"]["allNodes"] = True
    published = read_published([network, resource_slice("b", L4, 1)], "test")
    assert ([n.name for n in published.nodes], published.skipped_slices) == (["b"], 1)


def test_v1beta1_devices_are_read_through_basic() -> None:
    beta = resource_slice("a", H100, 1)
    beta["apiVersion"] = "resource.k8s.io/v1beta1"
    beta["spec"]["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                               for d in beta["spec"]["devices"]]
    assert read_published([beta], "test") == read_published([resource_slice("a", H100, 1)], "test")


def broken(change: str) -> dict[str, Any]:
    item = copy.deepcopy(resource_slice("a", H100, 1))
    device = item["spec"]["devices"][0]
    if change == "two kinds":
        device["attributes"]["type"] = {"string": "gpu", "int": 1}
    elif change == "quantity":
        device["capacity"]["memory"] = {"value": "80 GiB"}
    elif change == "driver":
        del item["spec"]["driver"]
    return item


@pytest.mark.parametrize(("item", "message"), [
    (broken("two kinds"), "f: ResourceSlice a-gpu.nvidia.com: spec.devices[0].attributes.type: sets 2 of string, "
                          "version, bool, int; an attribute has exactly one"),
    (broken("quantity"), "f: ResourceSlice a-gpu.nvidia.com: spec.devices[0].capacity.memory: '80 GiB' is not a "
                         "quantity (quantities must match the regular expression"),
    (broken("driver"), "f: ResourceSlice a-gpu.nvidia.com: spec.driver: missing"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "f: Pod p (v1): not a ResourceSlice, Node or "
                                                                     "DeviceClass"),
    ("text", "f: a document is a str, not a Kubernetes object"),
], ids=["an attribute with two kinds", "a capacity that is not a quantity", "no driver", "another kind",
        "not an object"])
def test_input_that_is_not_what_the_api_serves_names_the_field(item: Any, message: str) -> None:
    with pytest.raises(SliceError) as raised:
        read_published([item], "f")
    assert raised.value.problems[0].startswith(message)
