"""The what-if plans are exactly the plans of the fleet and of the edited fleet, byte for byte,
whether the edits only raise pools (planned again incrementally) or not (planned from scratch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet, Workloads, load_sources
from modelplane.report.json_text import indented
from modelplane.scheduling import Placement, place
from modelplane.scheduling.whatif import Drain, SetPoolNodes, SetReplicas, apply_edits
from modelplane.scheduling.whatif_plan import _raised, before_and_after
from tests.builders import cluster, pool
from tests.scheduling.test_properties import CLASSES, SETTINGS, clusters, deployments

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "plan_fleet.py"


def _texts(*placements: Placement) -> list[str]:
    return [indented(p.to_json()) for p in placements]


def _check(f: Fleet, w: Workloads, edits: list, previous: Placement | None) -> None:
    before, after, edited = before_and_after(f, w, edits, previous)
    edited_fleet, edited_workloads = apply_edits(f, w, edits)
    assert edited == edited_fleet
    assert _texts(before, after) == _texts(place(f, w, previous), place(edited_fleet, edited_workloads, previous))


@SETTINGS
@given(clusters(), deployments(), st.booleans(), st.data())
def test_the_what_if_plans_are_those_of_the_fleet_and_of_the_edited_fleet(cs, ds, sticky, data) -> None:
    f, w = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    previous = place(f, w) if sticky else None
    pools = sorted((c.name, p.name, p.capacity) for c in cs for p in c.spec.node_pools)
    edits: list = []
    for _ in range(data.draw(st.integers(1, 3))):
        cluster, pool, capacity = data.draw(st.sampled_from(pools))
        # Mostly raises (the incremental path), sometimes a lower count or another kind of edit.
        nodes = capacity + data.draw(st.integers(-2, 4))
        edits.append(SetPoolNodes(cluster, pool, max(nodes, 0)))
    if data.draw(st.integers(0, 4)) == 0:
        edits.append(data.draw(st.sampled_from([Drain(cs[0].name), SetReplicas(ds[0].key, 3)])))
    _check(f, w, edits, previous)


def test_only_edits_that_raise_pools_take_the_incremental_path() -> None:
    f = Fleet(clusters=(cluster("a", pool("p", cls="l4", nodes=2, max_nodes=4)),), classes=CLASSES)
    edits = {nodes: [SetPoolNodes("a", "p", nodes)] for nodes in (3, 4, 6)}
    edited = {nodes: apply_edits(f, Workloads(), edit)[0] for nodes, edit in edits.items()}
    assert _raised(f, edited[4], edits[4]) == {("a", "p"): 4}  # the same capacity: nothing changes
    assert _raised(f, edited[6], edits[6]) == {("a", "p"): 6}
    assert _raised(f, edited[3], edits[3]) is None  # maxNodeCount 4 -> 3 lowers the pool
    assert _raised(f, edited[6], [*edits[6], Drain("a")]) is None


def _generator():  # the benchmark's fleet generators (benchmarks/ is not a package)
    spec = importlib.util.spec_from_file_location("plan_fleet", BENCHMARK)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("shape", ["standard", "varied"])
@pytest.mark.parametrize("sticky", [False, True])
def test_raising_pools_of_a_generated_fleet_plans_what_the_edited_fleet_plans(shape: str, sticky: bool) -> None:
    generator = _generator()
    manifests = load_sources([("fleet.yaml", generator.SHAPES[shape](6, 60, 1.2, 3))])
    f, w = manifests.fleet, manifests.workloads
    previous = place(f, w) if sticky else None
    pools = [(c.name, p.name, p.capacity) for c in f.clusters for p in c.spec.node_pools]
    for name, pool_name, capacity in pools[::7]:  # every seventh pool, raised alone, then all of them at once
        _check(f, w, [SetPoolNodes(name, pool_name, capacity + 2)], previous)
    _check(f, w, [SetPoolNodes(name, pool_name, capacity + 4) for name, pool_name, capacity in pools[::7]], previous)
