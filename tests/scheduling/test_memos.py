"""Per-run memos keyed by an object's identity hold the object, so a freed object's identity, which
Python reuses, never answers for another object."""

from __future__ import annotations

import gc
import weakref

from unittest.mock import patch

from modelplane.api import DeviceRequest, Engine
from modelplane.scheduling.engines import shape_key, shape_of
from modelplane.scheduling.run import Run
from modelplane.scheduling.snapshot import Snapshot
from tests.builders import (
    cluster,
    deployment,
    fabric_device,
    fleet,
    gpu,
    klass,
    memory_at_least,
    pool,
    request,
    standalone,
    workloads,
)

ADA = 'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"'
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'


def _engine(selector: str) -> Engine:
    """A new engine each call, referenced by nothing else once the caller drops it."""
    return deployment("d", standalone(request(selector))).spec.engines[0]


def test_engines_made_and_dropped_one_after_another_each_get_their_own_answers() -> None:
    f = fleet(cluster("a", pool("l4", cls="l4")), cluster("b", pool("h100", cls="h100")),
              classes=(klass("l4", gpu(arch="Ada Lovelace")), klass("h100", gpu(arch="Hopper"))))
    run = Run(f, workloads())
    a, b = Snapshot.of(f).position["a"], Snapshot.of(f).position["b"]
    view = {name: run.snapshot.cluster(name) for name in ("a", "b")}
    for selector, where in [(ADA, "a"), (HOPPER, "b")] * 4:
        assert run.reach(_engine(selector)) == {a if where == "a" else b}, selector
        engine = _engine(selector)
        pools = view[where].pools
        placed = run.placements.of(engine, pools[:1])
        assert placed[engine.members[0].role].pool == pools[0].name
        del engine


def test_a_memo_by_identity_keeps_its_engine_and_member_alive() -> None:
    f = fleet(cluster("a", pool("h100")))
    run = Run(f, workloads())
    engine = _engine(HOPPER)
    run.shape(engine)
    run.placements.of(engine, run.snapshot.cluster("a").pools[:1])
    engine_ref, member_ref = weakref.ref(engine), weakref.ref(engine.members[0])
    del engine
    gc.collect()
    assert engine_ref() is not None and member_ref() is not None, "no other object can take over their identity"


def _request(selector: str, count: int = 1) -> DeviceRequest:
    return deployment("d", standalone(request(selector, count=count))).spec.engines[0].members[0].node_selector.devices[0]  # type: ignore[union-attr]


def test_a_requests_classes_are_read_from_the_devices_classes_share() -> None:
    """`Matcher._enough` asks each distinct CEL device once (`Snapshot.publishers`: the snapshot makes
    equal devices of different classes one object) and gives the classes that publish a satisfying
    device of at least the request's count, and those where it is a DRA one. Expected values by hand
    from the classes below: l4-1x and l4-4x publish one Ada device with counts 1 and 4, h100-ib a
    Hopper device of 8 and a Synthetic fabric device (count 1, never claimed)."""
    f = fleet(cluster("a", pool("l4", cls="l4-1x")),
              classes=(klass("l4-1x", gpu(arch="Ada Lovelace", count=1)), klass("l4-4x", gpu(arch="Ada Lovelace", count=4)),
                       klass("h100-ib", gpu(count=8), fabric_device())))
    run = Run(f, workloads())
    classes = run.snapshot.classes
    assert classes["l4-1x"][0].device is classes["l4-4x"][0].device, "the snapshot interns equal devices"
    fabric = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'
    for selector, count, enough, dra in [(ADA, 1, {"l4-1x", "l4-4x"}, {"l4-1x", "l4-4x"}), (ADA, 2, {"l4-4x"}, {"l4-4x"}),
                                         (ADA, 5, set(), set()), (HOPPER, 8, {"h100-ib"}, {"h100-ib"}),
                                         (fabric, 1, {"h100-ib"}, set()), ('device.driver == "gpu.amd.com"', 1, set(), set())]:
        assert run.matcher._enough(_request(selector, count)) == (enough, dra), (selector, count)


def test_engines_whose_selectors_no_device_tells_apart_share_one_shape_worked_out_once() -> None:
    """Floors of 20, 40 and 80 GiB: the fleet's devices have 24 GiB (L4) and 80 GiB (H100), so the
    40 and 80 GiB floors are met by the same device (one key, one `shape_of`), 20 GiB by both."""
    f = fleet(cluster("a", pool("l4", cls="l4"), pool("h100", cls="h100")),
              classes=(klass("l4", gpu(memory="24Gi", arch="Ada Lovelace")), klass("h100", gpu(memory="80Gi"))))
    run = Run(f, workloads())
    engines = [deployment(f"d{floor}", standalone(request(memory_at_least(f"{floor}Gi")))).spec.engines[0]
               for floor in (40, 80, 20)]
    keys = [shape_key(engine, run.matcher) for engine in engines]
    assert keys[0] == keys[1] != keys[2]
    calls = []
    with patch("modelplane.scheduling.run.shape_of", side_effect=lambda *a: calls.append(a) or shape_of(*a)):
        shapes = [run.shape(engine) for engine in engines]
    assert shapes[0] == shapes[1] != shapes[2]
    assert len(calls) == 2
    assert run._shape_list[shapes[0]].claims == (frozenset({"h100"}),)
    assert run._shape_list[shapes[2]].claims == (frozenset({"h100", "l4"}),)
