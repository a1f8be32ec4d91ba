"""Zero-downtime rollouts: a `zeroDowntimeRollouts` pool keeps room for one more pod of every size
placed on it (`packing.surge_need`), so a Standalone engine's surge pod always finds a node,
whatever nodes the cluster's scheduler picked for the pods already there."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.scheduling import place
from modelplane.scheduling.diff import pool_use
from modelplane.scheduling.ledger import Load
from modelplane.scheduling.packing import Use, need, surge_need
from tests.builders import cluster, deployment, exclusive_pool, fleet, gang, pool, request, standalone, workloads
from tests.scheduling.test_packing import every_pod_lands, kinds, least_used, pods_of, uses
from tests.scheduling.test_properties import SETTINGS

CASES = [
    # (name, per node, whole-node pods, shared pods, nodes with room for a surge pod)
    ("no pods keep no room", (8,), 0, {}, 0),
    ("whole-node pods keep one node free", (8,), 2, {}, 3),
    ("seven 1-GPU pods and a surge pod share one node", (8,), 0, {(1,): 7}, 1),
    ("eight 1-GPU pods need a second node for the surge pod", (8,), 0, {(1,): 8}, 2),
    ("the largest size present sets the room", (8,), 0, {(1,): 4, (4,): 1}, 2),
]


@pytest.mark.parametrize(("name", "per_node", "whole", "shared", "want"), CASES, ids=[c[0] for c in CASES])
def test_surge_need(name: str, per_node: tuple[int, ...], whole: int, shared: dict, want: int) -> None:
    assert surge_need(per_node, whole, shared) == want
    assert want >= need(per_node, whole, shared)


@SETTINGS
@given(st.data(), kinds, st.integers(0, 5))
def test_every_surge_pool_state_places_any_one_more_pod_of_a_size_present(data, per_node, capacity) -> None:
    load = Load(capacity, per_node, surge=True)
    for use in data.draw(st.lists(uses(per_node), max_size=10)):
        if load.need_with(use) > capacity:
            continue
        load.add(use)
        pods = pods_of(Use(load.whole, tuple(sorted(load.shared.items()))))
        extra = data.draw(st.sampled_from(pods))
        order = [*data.draw(st.permutations(pods)), extra]  # the surge pod comes last: the worst case
        picked = data.draw(st.sampled_from(["hypothesis", "least used"]))
        choose = least_used if picked == "least used" else \
            (lambda room, _: room[data.draw(st.integers(0, len(room) - 1))])
        assert every_pod_lands(per_node, capacity, order, choose), (load.whole, load.shared, extra)


def test_an_exclusive_pool_keeps_a_node_free_for_the_surge_pod() -> None:
    fleet_ = fleet(cluster("a", exclusive_pool("gpu", nodes=3, zero_downtime=True)))
    placement = place(fleet_, workloads(deployment("m", standalone(request()), replicas=3)))
    assert placement.deployments["ml/m"].scheduled == 2
    assert pool_use(placement) == {("a", "gpu"): 3}


def test_shared_pods_leave_room_for_one_more_of_their_size() -> None:
    placement = place(fleet(cluster("a", pool("gpu", nodes=1, zero_downtime=True))),
                      workloads(deployment("m", standalone(request()), replicas=8)))
    assert placement.deployments["ml/m"].scheduled == 7, "the eighth GPU is the surge pod's"
    without = place(fleet(cluster("a", pool("gpu", nodes=1))), workloads(deployment("m", standalone(request()), replicas=8)))
    assert without.deployments["ml/m"].scheduled == 8


def test_the_document_says_surge_only_on_pools_that_keep_room() -> None:
    fleet_ = fleet(cluster("a", exclusive_pool("gpu", nodes=2, zero_downtime=True)),
                   cluster("b", exclusive_pool("gpu", nodes=2)))
    placement = place(fleet_, workloads(deployment("m", standalone(request()), replicas=2)))
    members = {r.cluster: r.engines["engine"]["Standalone"] for r in placement.replicas}
    assert (members["a"].surge, members["b"].surge) == (True, False)
    text = json.dumps(placement.to_json())
    assert text.count('"surge": true') == 1 and '"surge": false' not in text
    assert pool_use(type(placement).from_json(json.loads(text))) == {("a", "gpu"): 2, ("b", "gpu"): 1}


def test_gang_pods_on_a_surge_pool_are_counted_with_room_but_never_surge() -> None:
    """The room is kept for every size placed (a gang's pods hold whole nodes too); compose never surges a gang."""
    fleet_ = fleet(cluster("a", pool("gpu", nodes=3, zero_downtime=True)))
    placement = place(fleet_, workloads(deployment("g", gang(request(count=8)))))
    assert placement.deployments["ml/g"].scheduled == 1
    assert pool_use(placement) == {("a", "gpu"): 3}
