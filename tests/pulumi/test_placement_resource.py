"""How `FleetPlacement` registers itself: what it asks the engine to keep out of `--diff`."""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2

from modelplane.api import dump_objects, load
from modelplane.pulumi.placement import HIDDEN, FleetPlacement
from tests.pulumi.harness import ROOT, Engine


class Recording(MockMonitor):
    """The mock monitor, keeping each registration request by resource name."""

    def __init__(self, mocks: Engine):
        super().__init__(mocks)
        self.requests: dict[str, resource_pb2.RegisterResourceRequest] = {}

    def RegisterResource(self, request: resource_pb2.RegisterResourceRequest) -> Any:  # noqa: N802 (gRPC name)
        self.requests[request.name] = request
        return super().RegisterResource(request)


def test_the_manifests_and_the_placement_document_are_kept_out_of_the_diff() -> None:
    engine = Engine(preview=True)
    monitor = Recording(engine)
    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="modelplane", stack="test", preview=True, monitor=monitor)
    manifests = load([ROOT / "examples" / "multi-cloud"])

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        return FleetPlacement("fleet", {"manifests": manifests, "strict": False},
                              pulumi.ResourceOptions(parent=parent, ignore_changes=["strict"])).placement

    program()
    request = monitor.requests["fleet"]
    assert list(request.hideDiffs) == list(HIDDEN) == ["objects", "objectsDigest", "placement"]
    assert json.loads(request.object["objects"]) == dump_objects(manifests), "one string: the objects' JSON text"
    assert request.parent.endswith("::parent") and list(request.ignoreChanges) == ["strict"], \
        "the caller's options are kept"
