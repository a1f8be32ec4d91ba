"""The InferenceCluster condition DevicesMatchClasses (control-cluster mode): `compose.published`'s check
of what the cluster's nodes publish, written into its status. On the objects recorded from a real API
server (tests/data/control-cluster: onprem-us-east's pool h100 is of class hgx-h100-8x, which declares
8 GPUs of productName "NVIDIA H100 80GB HBM3" with 81559Mi each) and ResourceSlices as the NVIDIA
driver publishes them (tests/nvidia.py: an H200 publishes 143771Mi); every document validates against
the status schema of the generated CRDs.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.slices import Published, read_published
from modelplane.compose.status_documents import statuses
from modelplane.scheduling import place
from tests.compose.test_status import served
from tests.compose.test_status_capacity import fits
from tests.nvidia import H100, H200, node, resource_slice

ONPREM = "InferenceCluster/onprem-us-east"


def written(published: dict[str, Published | str]) -> dict[str, dict[str, Any]]:
    source = served()
    placement = place(source.manifests.fleet, source.manifests.workloads)
    return statuses(source.manifests, placement, source.observed, source.skipped, {}, "", published=published)


def publishing(*cards: Any) -> Published:
    items = [item for at, card in enumerate(cards)
             for item in (node(f"h{at + 1}", "h100"), resource_slice(f"h{at + 1}", card, 8))]
    return read_published(items, "test")


def condition(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    [only] = found[ONPREM]["status"]["conditions"]
    assert only["type"] == "DevicesMatchClasses"
    return only


def test_nodes_that_publish_what_the_class_declares_match() -> None:
    found = written({"onprem-us-east": publishing(H100, H100)})
    got = condition(found)
    assert (got["status"], got["reason"]) == ("True", "PublishedDevicesMatch")
    assert got["observedGeneration"] == served().observed[("InferenceCluster", "", "onprem-us-east")].generation
    assert fits(ONPREM, found[ONPREM]["status"]) == []


def test_a_difference_is_false_with_the_field_path_and_what_the_nodes_publish() -> None:
    found = written({"onprem-us-east": publishing(H100, H200)})
    got = condition(found)
    assert (got["status"], got["reason"]) == ("False", "PublishedDevicesDiffer")
    assert ("InferenceClass hgx-h100-8x spec.devices[0].capacity.memory: declared 81559Mi; the devices of pool h100 "
            "of cluster onprem-us-east (h2) publish 143771Mi") in got["message"]
    assert ("InferenceClass hgx-h100-8x spec.devices[0].attributes.productName: declared string 'NVIDIA H100 80GB "
            "HBM3'; pool h100 of cluster onprem-us-east (h2) publishes string 'NVIDIA H200'") in got["message"]
    assert "(h1)" not in got["message"], "the node that matches is not reported"
    assert fits(ONPREM, found[ONPREM]["status"]) == []


def test_a_cluster_not_read_is_unknown_and_one_not_observed_has_no_condition() -> None:
    found = written({"onprem-us-east": "the cluster could not be read: 403 Forbidden"})
    got = condition(found)
    assert (got["status"], got["reason"], got["message"]) == (
        "Unknown", "NotChecked", "not checked this run: the cluster could not be read: 403 Forbidden")
    assert "conditions" not in found["InferenceCluster/gke-us-central"]["status"]
    assert fits(ONPREM, found[ONPREM]["status"]) == []


@pytest.mark.parametrize("published", [None, {}])
def test_without_anything_published_a_cluster_status_is_empty(published: dict[str, Any] | None) -> None:
    source = served()
    placement = place(source.manifests.fleet, source.manifests.workloads)
    found = statuses(source.manifests, placement, source.observed, source.skipped, {}, "", published=published)
    assert {key: entry["status"] for key, entry in found.items() if key.startswith("InferenceCluster/")} == {
        "InferenceCluster/gke-us-central": {}, "InferenceCluster/onprem-us-east": {}}, \
        "nothing to say (an empty status clears a refusal an earlier run wrote)"
