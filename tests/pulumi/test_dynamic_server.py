"""The placement provider behind the Pulumi SDK's own dynamic-provider gRPC server (`python -m pulumi.dynamic`).

This is the process the Pulumi engine starts for dynamic resources: it deserializes `__provider`
(dill, by reference to `modelplane.pulumi.placement`) and speaks the provider protocol. The test
plays the engine: Configure, then Check (no olds) and Create, then on the next run Check with the
stored inputs as olds, Diff against the stored outputs, Update, and finally Delete; all properties
go through the same protobuf Struct encoding the engine uses.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from modelplane.api import dump_objects, load
from modelplane.pulumi.placement import PLACEMENT_ID, PlacementProvider, objects_text
from modelplane.scheduling import Placement
from tests.pulumi.harness import ROOT

URN = "urn:pulumi:dev::modelplane::pulumi-python:dynamic/modelplane:Placement::modelplane-placement"
DEMO = dump_objects(load([ROOT / "examples" / "multi-cloud"]))


@pytest.fixture(scope="module")
def provider() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    server = subprocess.Popen([sys.executable, "-m", "pulumi.dynamic"], stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().decode().strip()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        stub.Configure(provider_pb2.ConfigureRequest(args=struct_pb2.Struct()))
        yield stub
        channel.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


def struct(properties: dict[str, Any]) -> struct_pb2.Struct:
    """Properties as the engine sends them (a loop of its own: the mocks' event loop stays untouched)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(properties, {}))
    finally:
        loop.close()


def news(objects: list[dict[str, Any]]) -> struct_pb2.Struct:
    return struct({"__provider": serialize_provider(PlacementProvider()), "objects": objects_text(objects), "strict": False})


def replicas(properties: struct_pb2.Struct) -> list[tuple[str, str, int]]:
    placement = Placement.from_json(json.loads(rpc.deserialize_properties(properties)["placement"]))
    return sorted(replica.slot for replica in placement.replicas)


def test_the_engine_order_through_the_sdk_server(provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    checked = provider.Check(provider_pb2.CheckRequest(urn=URN, olds=struct({}), news=news(DEMO)))
    assert list(checked.failures) == []
    created = provider.Create(provider_pb2.CreateRequest(urn=URN, properties=checked.inputs))
    assert created.id == PLACEMENT_ID
    first = replicas(created.properties)
    assert len(first) == 6

    same = provider.Check(provider_pb2.CheckRequest(urn=URN, olds=checked.inputs, news=news(DEMO)))
    unchanged = provider.Diff(provider_pb2.DiffRequest(id=created.id, urn=URN, olds=created.properties,
                                                       news=same.inputs))
    assert unchanged.changes == provider_pb2.DiffResponse.DIFF_NONE and list(unchanged.replaces) == []

    scaled_objects = copy.deepcopy(DEMO)
    next(o for o in scaled_objects if o["metadata"]["name"] == "qwen3-8b")["spec"]["replicas"] = 3
    scaled = provider.Check(provider_pb2.CheckRequest(urn=URN, olds=same.inputs, news=news(scaled_objects)))
    diff = provider.Diff(provider_pb2.DiffRequest(id=created.id, urn=URN, olds=created.properties,
                                                  news=scaled.inputs))
    assert diff.changes == provider_pb2.DiffResponse.DIFF_UNKNOWN and list(diff.replaces) == [], \
        "a change is left to the engine to detail (it diffs the inputs), never a replacement"
    updated = provider.Update(provider_pb2.UpdateRequest(id=created.id, urn=URN, olds=created.properties,
                                                         news=scaled.inputs))
    after = replicas(updated.properties)
    assert set(first) < set(after) and len(after) == 7, "every existing replica stays; one is added"

    provider.Delete(provider_pb2.DeleteRequest(id=created.id, urn=URN, properties=updated.properties))


def test_check_failures_reach_the_engine_as_path_and_reason(provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    broken = copy.deepcopy(DEMO)
    next(o for o in broken if o["metadata"]["name"] == "qwen3-8b")["spec"]["replicas"] = -1
    checked = provider.Check(provider_pb2.CheckRequest(urn=URN, olds=struct({}), news=news(broken)))
    index = next(i for i, o in enumerate(broken) if o["metadata"]["name"] == "qwen3-8b")
    assert [(f.property, f.reason) for f in checked.failures] == [
        (f"objects[{index}].spec.replicas", "ModelDeployment ml-team/qwen3-8b: must be at least 0; got int -1")]
