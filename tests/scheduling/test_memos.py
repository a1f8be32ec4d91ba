"""Per-run memos keyed by an object's identity hold the object, so a freed object's identity, which
Python reuses, never answers for another object."""

from __future__ import annotations

import gc
import weakref

from modelplane.api import Engine
from modelplane.scheduling.run import Run
from modelplane.scheduling.snapshot import Snapshot
from tests.builders import cluster, deployment, fabric_device, fleet, gpu, klass, pool, request, standalone, workloads

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


def test_a_requests_most_per_node_is_read_per_class_from_the_devices_classes_share() -> None:
    """`Matcher._most_per_node` asks each distinct CEL device once (`Snapshot.publishers`: the snapshot makes
    equal devices of different classes one object) and gives each class that publishes a satisfying
    device the largest count of such a device there, and of a DRA one. Expected values by hand from
    the classes below: l4-1x and l4-4x publish one Ada device with counts 1 and 4, h100-ib a Hopper
    device of 8 and a Synthetic fabric device (count 1, never claimed)."""
    f = fleet(cluster("a", pool("l4", cls="l4-1x")),
              classes=(klass("l4-1x", gpu(arch="Ada Lovelace", count=1)), klass("l4-4x", gpu(arch="Ada Lovelace", count=4)),
                       klass("h100-ib", gpu(count=8), fabric_device())))
    run = Run(f, workloads())
    classes = run.snapshot.classes
    assert classes["l4-1x"][0].device is classes["l4-4x"][0].device, "the snapshot interns equal devices"
    fabric = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'
    for selector, expected in [(ADA, {"l4-1x": (1, 1), "l4-4x": (4, 4)}), (HOPPER, {"h100-ib": (8, 8)}),
                               (fabric, {"h100-ib": (1, 0)}), ('device.driver == "gpu.amd.com"', {})]:
        request_ = _engine(selector).members[0].node_selector.devices[0]  # type: ignore[union-attr]
        assert run.matcher._most_per_node(request_, run.snapshot) == expected, selector
