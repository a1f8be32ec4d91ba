"""What-if edits and placement diffs: each edit form, its errors, and what changes when it is planned."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet, Workloads
from modelplane.scheduling import Placement, place
from modelplane.scheduling.diff import Change, diff
from modelplane.scheduling.whatif import EditError, apply_edits, parse_edit
from tests.builders import cluster, deployment, exclusive_pool, fleet, gang, klass, pool, workloads
from tests.scheduling.test_properties import SETTINGS, clusters, deployments
from tests.scheduling.test_properties import plan as plan_random

Slot = tuple[str, int]


def base_fleet(b_nodes: int = 2) -> Fleet:
    return fleet(cluster("a", exclusive_pool("gpu", nodes=2), exclusive_pool("spare", nodes=1)),
                 cluster("b", exclusive_pool("gpu", nodes=b_nodes)),
                 classes=(klass("h100"), klass("h100-bis")))


def base_workloads(replicas: int = 2) -> Workloads:
    return workloads(deployment("d", replicas=replicas))


@dataclass(frozen=True)
class Case:
    name: str
    edits: tuple[str, ...]
    want: list[tuple[str, str, Slot | None, Slot | None]]
    """(change, deployment, from (cluster, index), to (cluster, index)), unchanged replicas left out."""
    fleet: Fleet = base_fleet()
    workloads: Workloads = base_workloads()


CASES = [
    Case("drain moves the cluster's replica to the next eligible cluster", ("drain a",),
         [("move", "ml/d", ("a", 0), ("b", 1))]),
    Case("removing a cluster moves its replicas as a drain does", ("remove a",),
         [("move", "ml/d", ("a", 0), ("b", 1))]),
    Case("a drain with no room elsewhere removes the replica and leaves the deployment short", ("drain b",),
         [("move", "ml/d", ("b", 0), ("a", 1))], fleet=base_fleet(b_nodes=1)),
    Case("a drain that leaves no room anywhere removes the replica", ("drain a",),
         [("remove", "ml/d", ("a", 0), None)], fleet=base_fleet(b_nodes=1)),
    Case("shrinking a pool to zero moves its replica to another pool of the cluster", ("pool a/gpu nodes=0",),
         [("move", "ml/d", ("a", 0), ("a", 0))]),
    Case("removing a pool moves its replica to another pool of the cluster", ("pool a/gpu remove",),
         [("move", "ml/d", ("a", 0), ("a", 0))]),
    Case("a new pool on a new-to-it class hosts the extra replica of a scale-up",
         ("replicas ml/d=4", "pool b/more class=h100-bis nodes=1"),
         [("create", "ml/d", None, ("a", 1)), ("create", "ml/d", None, ("b", 1))],
         fleet=fleet(cluster("a", exclusive_pool("gpu", nodes=2)), cluster("b", exclusive_pool("gpu", nodes=1)),
                     classes=(klass("h100"), klass("h100-bis")))),
    Case("scaling down removes from the later cluster on a tie", ("replicas ml/d=1",),
         [("remove", "ml/d", ("b", 0), None)]),
    Case("raising a full pool's capacity places a replica that was short", ("pool b/gpu nodes=2",),
         [("create", "ml/d", None, ("b", 1))], fleet=base_fleet(b_nodes=1), workloads=base_workloads(replicas=5)),
    Case("a gang needs both nodes of a pool: two more nodes place it",
         ("pool b/gpu nodes=2",), [("create", "ml/g", None, ("b", 0))],
         fleet=fleet(cluster("b", exclusive_pool("gpu", nodes=0))), workloads=workloads(deployment("g", gang()))),
]


def changes(case: Case) -> list[tuple[str, str, Slot | None, Slot | None]]:
    before = place(case.fleet, case.workloads)
    edited = apply_edits(case.fleet, case.workloads, [parse_edit(text) for text in case.edits])
    after = place(*edited)
    return [(str(c.change), c.deployment, c.before and (c.before.cluster, c.before.index),
             c.after and (c.after.cluster, c.after.index)) for c in diff(before, after, case.fleet, edited[0]).changed]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_edit_changes_what_it_should(case: Case) -> None:
    assert changes(case) == case.want


def test_a_drain_that_leaves_a_deployment_short_reports_it_with_its_reasons() -> None:
    before = place(base_fleet(b_nodes=1), base_workloads())
    edited = apply_edits(base_fleet(b_nodes=1), base_workloads(), [parse_edit("drain a")])
    result = diff(before, place(*edited), base_fleet(b_nodes=1), edited[0])
    [short] = [d for d in result.deployments if d.became_short]
    assert (short.deployment, short.scheduled, short.desired) == ("ml/d", (2, 1), (2, 2))
    assert short.reasons[0].startswith("0/2 clusters can host another replica of ml/d: 1 cluster(s) had untolerated "
                                       "taint {modelplane.ai/what-if-drain:NoExecute}")
    assert [(p.cluster, p.pool, p.used, p.free) for p in result.pools] == [("a", "gpu", (1, 0), (1, 2))]


@pytest.mark.parametrize("text, pool_after", [
    ("pool p/fixed nodes=5", {"nodeCount": 5}),
    ("pool p/auto nodes=6", {"nodeCount": 2, "minNodeCount": 1, "maxNodeCount": 6}),
    ("pool p/auto nodes=1", {"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 1}),
    ("pool p/auto nodes=0", {"nodeCount": 0, "minNodeCount": 0}),
])
def test_pool_nodes_sets_max_node_count_when_the_pool_autoscales_else_node_count(text: str,
                                                                               pool_after: dict[str, int]) -> None:
    auto = {**pool("auto", nodes=2, max_nodes=4), "minNodeCount": 1}
    original = fleet(cluster("p", pool("fixed", nodes=1), auto))
    edited, _ = apply_edits(original, workloads(), [parse_edit(text)])
    name = text.split("/")[1].split()[0]
    [after] = [p for p in edited.cluster("p").spec.node_pools if p.name == name]
    assert after.model_dump(by_alias=True, include={"node_count", "min_node_count", "max_node_count"},
                            exclude_none=True) == pool_after
    assert original.cluster("p").pool("auto").max_node_count == 4, "the input fleet is never changed"


@pytest.mark.parametrize("text", [
    "pool a/gpu nodes=3", "pool a/new class=h100 nodes=2", "pool a/gpu remove", "drain a", "remove a",
    "replicas ml/d=3",
])
def test_an_edit_reads_back_from_its_text(text: str) -> None:
    assert str(parse_edit(f"  {text.replace(' ', '   ')} ")) == text


@pytest.mark.parametrize("text, message", [
    ("drian a", "cannot read the edit 'drian a': use one of: pool CLUSTER/POOL nodes=N;"),
    ("pool a/gpu size=3", "a pool edit is `nodes=N`, `class=CLASS nodes=N` or `remove`"),
    ("pool a/gpu nodes=-1", "nodes must be a whole number from 0 to 10000, not '-1'"),
    ("replicas ml/d=0", "replicas must be a whole number from 1 to 1000, not '0'"),
    ("drain z", "no InferenceCluster 'z' (clusters: a, b)"),
    ("pool a/nope nodes=1", "cluster a has no pool 'nope' (pools: gpu, spare)"),
    ("pool a/nope remove", "cluster a has no pool 'nope' (pools: gpu, spare)"),
    ("pool a/x class=b200 nodes=1", "no InferenceClass 'b200' (classes: h100, h100-bis)"),
    ("pool a/gpu class=h100 nodes=1", "cluster a already has a pool 'gpu': resize it with `pool a/gpu nodes=N`"),
    ("replicas ml/nope=2", "no ModelDeployment 'ml/nope' (deployments: ml/d)"),
])
def test_a_bad_edit_names_what_is_wrong_and_what_is_valid(text: str, message: str) -> None:
    with pytest.raises(EditError) as error:
        apply_edits(base_fleet(), base_workloads(), [parse_edit(text)])
    assert message in str(error.value)


def test_an_identical_placement_has_no_changes() -> None:
    placement = place(base_fleet(), base_workloads())
    result = diff(placement, placement, base_fleet(), base_fleet())
    assert result.empty and result.summary() == "no placement changes"
    assert [c.change for c in result.replicas] == [Change.UNCHANGED, Change.UNCHANGED]
    assert result.to_json() == []


def test_changes_from_an_empty_state_are_all_creates_with_their_pools() -> None:
    placement = place(base_fleet(), base_workloads())
    result = diff(Placement(), placement, base_fleet(), base_fleet())
    assert result.summary() == "2 to create, 0 to move, 0 to remove"
    assert result.to_json() == [
        {"change": "create", "deployment": "ml/d", "to": {"cluster": "a", "index": 0,
                                                          "engines": {"engine": {"Standalone": "gpu"}}}},
        {"change": "create", "deployment": "ml/d", "to": {"cluster": "b", "index": 0,
                                                          "engines": {"engine": {"Standalone": "gpu"}}}},
        {"change": "pool", "cluster": "a", "pool": "gpu", "used": [0, 1], "capacity": [2, 2]},
        {"change": "pool", "cluster": "b", "pool": "gpu", "used": [0, 1], "capacity": [2, 2]},
        {"change": "deployment", "deployment": "ml/d", "scheduled": [0, 2], "desired": [0, 2], "reasons": []},
    ]


@SETTINGS
@given(clusters(), deployments(), st.booleans())
def test_a_what_if_with_no_edits_reports_no_change(cs, ds, sticky) -> None:
    first = plan_random(cs, ds)
    previous = first if sticky else None
    f, w = Fleet(clusters=tuple(cs)), Workloads(deployments=tuple(ds))
    edited = apply_edits(f, w, [])
    assert edited == (f, w)
    before, after = plan_random(cs, ds, previous), plan_random(list(edited[0].clusters), list(edited[1].deployments),
                                                               previous)
    assert diff(before, after, f, edited[0]).empty


def test_the_markdown_of_a_reason_is_escaped_outside_code_spans() -> None:
    from modelplane.report import changes as changes_report
    from modelplane.scheduling.diff import DeploymentChange, PlacementDiff

    short = DeploymentChange("ml/d", (1, 0), (1, 1), (False, True), ("selector `a < b` fails on <none>",))
    assert changes_report.markdown(PlacementDiff((), (), (short,)))[-1] == \
        "- `ml/d`: selector `a < b` fails on &lt;none&gt;", "code spans show as written, the rest is escaped"
