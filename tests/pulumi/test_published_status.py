"""Control-cluster mode under Pulumi's mocks: what an Existing cluster's nodes publish reaches its
InferenceCluster's status as the condition DevicesMatchClasses. The real program reads the recorded
control cluster (`test_control_cluster`); the workload cluster onprem-us-east is a stand-in API server
below the real `kubernetes` client, serving its Nodes and ResourceSlices as the NVIDIA driver
publishes them (tests/nvidia.py), or refusing; `pulumi/observe.py` reads them for real.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlparse

import pytest
import urllib3
from kubernetes import client, config

from modelplane.pulumi.observe import devices
from tests.nvidia import H100, H200, node, resource_slice
from tests.pulumi.harness import Engine, run_program
from tests.pulumi.recorded_api import RecordedCluster, _answer
from tests.pulumi.test_control_cluster import cluster, cluster_config, status_of  # noqa: F401 (the fixture)


class WorkloadCluster:
    """Answers the two lists `observe_cluster` makes; every other request, or all with `refuse`, is refused."""

    def __init__(self, items: list[dict[str, Any]], refuse: int | None = None):
        self.items, self.refuse, self.paths = items, refuse, []

    def request(self, method: str, url: str, **_: Any) -> urllib3.HTTPResponse:
        path = urlparse(url).path
        self.paths.append(path)
        kinds = {"/api/v1/nodes": "Node", "/apis/resource.k8s.io/v1/resourceslices": "ResourceSlice"}
        if self.refuse is not None or method != "GET" or path not in kinds:
            return _answer(self.refuse or 404, {"kind": "Status", "code": self.refuse or 404})
        # A list's items carry no kind or apiVersion, as the API server serves them.
        items = [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")}
                 for i in self.items if i["kind"] == kinds[path]]
        return _answer(200, {"kind": f"{kinds[path]}List", "apiVersion": "v1", "items": items})

    def clear(self) -> None:
        """What the client calls when it is closed."""


@pytest.fixture
def workload(monkeypatch: pytest.MonkeyPatch) -> WorkloadCluster:
    served = WorkloadCluster([])

    def connect(_: Any) -> client.ApiClient:
        configuration = client.Configuration()
        configuration.host = "https://onprem.example:6443"
        api = client.ApiClient(configuration)
        api.rest_client.pool_manager = served  # type: ignore[assignment]
        return api

    monkeypatch.setattr(config, "new_client_from_config_dict", connect)
    return served


def ready(name: str) -> dict[str, Any]:
    return {**node(name, "h100"), "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def devices_condition(recorded: RecordedCluster) -> dict[str, Any]:
    [condition] = status_of(recorded, "InferenceCluster", "", "onprem-us-east")["conditions"]
    assert condition["type"] == "DevicesMatchClasses"
    return condition


def test_a_node_publishing_other_devices_than_its_class_is_written_into_the_cluster_status(
        cluster: RecordedCluster, workload: WorkloadCluster) -> None:  # noqa: F811 (the fixture)
    workload.items = [ready("h1"), resource_slice("h1", H100, 8), ready("h2"), resource_slice("h2", H200, 8)]
    run_program(Engine(), cluster_config())
    assert sorted(set(workload.paths)) == ["/api/v1/nodes", "/apis/resource.k8s.io/v1/resourceslices"], \
        "no request beyond the observed-capacity lists"
    status = status_of(cluster, "InferenceCluster", "", "onprem-us-east")
    assert status["health"] == "Up" and status["pools"][0]["observed"] == 2
    condition = devices_condition(cluster)
    assert (condition["status"], condition["reason"]) == ("False", "PublishedDevicesDiffer")
    assert ("InferenceClass hgx-h100-8x spec.devices[0].capacity.memory: declared 81559Mi; the devices of pool h100 "
            "of cluster onprem-us-east (h2) publish 143771Mi") in condition["message"]
    assert condition["lastTransitionTime"]
    assert "conditions" not in status_of(cluster, "InferenceCluster", "", "gke-us-central"), "not observed"

    fixed = copy.deepcopy(workload.items)
    fixed[3] = resource_slice("h2", H100, 8)
    workload.items = fixed
    run_program(Engine(), cluster_config())
    assert (devices_condition(cluster)["status"], devices_condition(cluster)["reason"]) == (
        "True", "PublishedDevicesMatch")


def test_a_cluster_that_refuses_is_not_checked_and_the_run_goes_on(
        cluster: RecordedCluster, workload: WorkloadCluster) -> None:  # noqa: F811 (the fixture)
    workload.refuse = 403
    run = run_program(Engine(), cluster_config())
    assert run.outputs["placement"]["ml-team/qwen3-8b"]["scheduled"] == "2/2"
    condition = devices_condition(cluster)
    assert (condition["status"], condition["reason"]) == ("Unknown", "NotChecked")
    assert condition["message"] == "not checked this run: the cluster could not be read: 403 403"



def test_slices_that_are_not_what_the_api_serves_are_a_reason_not_an_error() -> None:
    bad = resource_slice("h1", H100, 1)
    bad["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots"
    why = devices([ready("h1")], [bad], "InferenceCluster onprem-us-east")
    assert isinstance(why, str) and why.startswith(
        "InferenceCluster onprem-us-east: ResourceSlice h1-gpu.nvidia.com: spec.devices[0].capacity.memory: 'lots' "
        "is not a quantity"), why


def test_a_node_listed_without_the_pool_label_is_known_to_have_none() -> None:
    """Only labelled Nodes are listed: the slices of any other node belong to no pool, even when no Node
    is labelled (so they are never counted as the only pool's, as a file without Node objects would be)."""
    published = devices([], [resource_slice("x1", H100, 8)], "test")
    assert not isinstance(published, str)
    assert published.node_objects and [n.pool for n in published.nodes] == [None]
