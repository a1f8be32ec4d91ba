"""Sub-node packing: the admission rule of `packing.py`, and that it holds against an adversarial scheduler.

The property tests simulate the cluster's own scheduler at its worst: pods arrive in a random order
and each goes to any node with room for it (drawn by hypothesis, or the least-used node, which is
how Kubernetes' default scoring spreads pods). Every pool state the ledger accepts, and every pool
of a placement, must place every pod whatever those choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet, Workloads
from modelplane.scheduling import Placement, explain, place
from modelplane.scheduling.diff import pool_members, pool_use
from modelplane.scheduling.ledger import Load
from modelplane.scheduling.packing import Sizes, Use, need
from tests.builders import (
    cluster,
    deployment,
    exclusive_pool,
    fleet,
    gang,
    gpu,
    klass,
    memory_at_least,
    pool,
    request,
    standalone,
    workloads,
)
from tests.scheduling.test_properties import SETTINGS

Pod = Sizes | None
"""A shared pod's devices per kind, or None for a whole-node pod."""
Chooser = Callable[[list[int], list[list[int]]], int]


def every_pod_lands(per_node: Sizes, capacity: int, pods: list[Pod], choose: Chooser) -> bool:
    """Place `pods` in the given order, each on the node `choose` picks among those with room; a
    whole-node pod needs an empty node and fills it."""
    nodes = [[0] * len(per_node) for _ in range(capacity)]
    for pod in pods:
        if pod is None:
            room = [i for i, used in enumerate(nodes) if not any(used)]
        else:
            room = [i for i, used in enumerate(nodes) if all(u + k <= d for u, k, d in zip(used, pod, per_node))]
        if not room:
            return False
        node = choose(room, nodes)
        nodes[node] = list(per_node) if pod is None else [u + k for u, k in zip(nodes[node], pod)]
    return True


def least_used(room: list[int], nodes: list[list[int]]) -> int:
    """Kubernetes' default spreading: the node with the fewest devices taken (then the first)."""
    return min(room, key=lambda i: (sum(nodes[i]), i))


def pods_of(use: Use) -> list[Pod]:
    return [None] * use.whole + [sizes for sizes, pods in use.shared for _ in range(pods)]


@dataclass(frozen=True)
class Case:
    name: str
    per_node: Sizes
    whole: int
    shared: dict[Sizes, int]
    want: int


CASES = [
    Case("nothing needs no node", (8,), 0, {}, 0),
    Case("whole-node pods need a node each", (8,), 3, {}, 3),
    Case("eight 1-GPU pods share one 8-GPU node", (8,), 0, {(1,): 8}, 1),
    Case("nine 1-GPU pods need a second node", (8,), 0, {(1,): 9}, 2),
    # The issue's example: ten 1-GPU pods spread 5/5 leave 3 free on each node, so the 4-GPU pod
    # (T = 8 - 4 + 1 = 5) needs floor(10 / 5) = 2 blocked nodes + 1.
    Case("ten 1-GPU pods and a 4-GPU pod need three nodes, not two", (8,), 0, {(1,): 10, (4,): 1}, 3),
    # Pods of more than half a node (5 of 8) each block a node for another: three need three nodes.
    Case("pods of more than half a node need a node each", (8,), 0, {(5,): 3}, 3),
    Case("two half-node pods share a node", (8,), 0, {(4,): 2}, 1),
    # Any shared pod may sit alone on a node, so whole-node pods need nodes beside every one of them.
    Case("a whole-node pod beside two shared pods needs three nodes", (8,), 1, {(1,): 2}, 3),
    # Kinds add up: the pod with 1 GPU + 1 NIC is blocked by nodes full of GPUs or of NICs.
    Case("each kind a pod uses can block it", (8, 2), 0, {(1, 1): 2, (1, 0): 7}, 2),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_need(case: Case) -> None:
    assert need(case.per_node, case.whole, case.shared) == case.want
    pods: list[Pod] = [None] * case.whole + [s for s, n in case.shared.items() for _ in range(n)]
    assert every_pod_lands(case.per_node, case.want, pods, least_used)


def test_the_issue_example_really_fails_on_two_nodes_when_pods_spread() -> None:
    """The rule is not just cautious: on the capacity it refuses, spreading strands the 4-GPU pod."""
    assert not every_pod_lands((8,), 2, [(1,)] * 10 + [(4,)], least_used)
    assert not every_pod_lands((8,), 2, [(1,), (1,), None], least_used)


kinds = st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=1, max_size=2).map(tuple)


@st.composite
def uses(draw: st.DrawFn, per_node: Sizes) -> Use:
    pods = draw(st.integers(1, 3))
    if draw(st.integers(0, 4)) == 0:
        return Use(pods)
    sizes = tuple(draw(st.integers(0, d - 1)) for d in per_node)
    if not any(sizes):
        return Use(pods)
    return Use(0, ((sizes, pods),))


@SETTINGS
@given(st.data(), kinds, st.integers(0, 5))
def test_every_pool_state_the_ledger_accepts_places_every_pod_whatever_the_scheduler_picks(data, per_node,
                                                                                          capacity) -> None:
    load = Load(capacity, per_node)
    for use in data.draw(st.lists(uses(per_node), max_size=12)):
        if load.need_with(use) <= capacity:
            load.add(use)
            pods = pods_of(Use(load.whole, tuple(sorted(load.shared.items()))))
            order = data.draw(st.permutations(pods))
            picked = data.draw(st.sampled_from(["hypothesis", "least used"]))
            choose = least_used if picked == "least used" else \
                (lambda room, _: room[data.draw(st.integers(0, len(room) - 1))])
            assert every_pod_lands(per_node, capacity, list(order), choose), (load.whole, load.shared)
    assert load.need <= capacity


H100_NIC = klass("h100-nic", gpu(memory="81559Mi", count=8),
                 {"name": "nic", "driver": "nic.example.com", "deviceClassName": "nic.example.com", "count": 2})
NIC = 'device.driver == "nic.example.com"'
PACKING_CLASSES = (klass("h100"), klass("h100-4x", gpu(count=4)), H100_NIC)


@st.composite
def packing_fleets(draw: st.DrawFn) -> tuple[Fleet, Workloads]:
    clusters = []
    for index in range(draw(st.integers(1, 2))):
        pools = [(exclusive_pool if draw(st.integers(0, 4)) == 0 else pool)(
            f"p{p}", cls=draw(st.sampled_from([c.name for c in PACKING_CLASSES])), nodes=draw(st.integers(0, 3)))
            for p in range(draw(st.integers(1, 2)))]
        clusters.append(cluster(f"c{index}", *pools))
    ds = []
    for index in range(draw(st.integers(1, 5))):
        requests = [request(memory_at_least("20Gi"), count=draw(st.sampled_from([1, 2, 3, 4, 8])))]
        if draw(st.booleans()) and draw(st.booleans()):
            requests.append(request(NIC, name="nic", count=1))
        engine: dict[str, Any] = (gang(*requests) if draw(st.integers(0, 5)) == 0
                                  else standalone(*requests, copies=draw(st.integers(1, 3))))
        ds.append(deployment(f"d{index}", engine, replicas=draw(st.integers(1, 6))))
    return fleet(*clusters, classes=PACKING_CLASSES), workloads(*ds)


def pool_pods(placement: Placement) -> dict[tuple[str, str], tuple[Sizes, list[Pod]]]:
    """Per pool, its kinds' devices per node and its pods, read from the placement document."""
    found = {}
    for key, members in pool_members(placement).items():
        per_node = {use.device: use.per_node for m in members for use in m.devices}
        kinds = sorted(per_node)
        pods: list[Pod] = []
        for m in members:
            pods += [None] * m.nodes
            claimed = {use.device: use.count for use in m.devices}
            pods += [tuple(claimed.get(kind, 0) for kind in kinds)] * m.shared_pods
        found[key] = (tuple(per_node[kind] for kind in kinds), pods)
    return found


@SETTINGS
@given(packing_fleets(), st.randoms(use_true_random=False))
def test_every_pool_of_a_placement_places_every_pod_whatever_the_scheduler_picks(drawn, rng) -> None:
    f, w = drawn
    placement = place(f, w)
    capacity = {(c.name, p.name): p.capacity for c in f.clusters for p in c.spec.node_pools}
    used = pool_use(placement)
    for key, (per_node, pods) in pool_pods(placement).items():
        assert used[key] <= capacity[key]
        rng.shuffle(pods)
        assert every_pod_lands(per_node, capacity[key], pods, least_used), (key, pods)
        assert every_pod_lands(per_node, capacity[key], pods, lambda room, _: rng.choice(room)), (key, pods)
    assert place(f, w, placement).to_json() == placement.to_json()


def test_eight_one_gpu_replicas_fit_two_eight_gpu_nodes() -> None:
    """The issue's first example: before, 2 of 8 were placed and 14 GPUs sat idle."""
    placement = place(fleet(cluster("a", pool(nodes=2))), workloads(deployment("m", replicas=8)))
    assert placement.deployments["ml/m"].scheduled == 8
    assert pool_use(placement) == {("a", "gpu"): 1}
    member = placement.replicas[0].engines["engine"]["Standalone"]
    assert (member.nodes, member.shared_pods, [(u.device, u.count, u.per_node) for u in member.devices]) == \
        (0, 1, [("gpu", 1, 8)])


@pytest.mark.parametrize(("name", "pools", "engine", "want"), [
    ("an Exclusive pool gives each pod a node", [exclusive_pool(nodes=2)], standalone(), 2),
    ("a gang keeps a node per pod", [pool(nodes=4)], gang(), 2),
    ("a pod that claims every GPU of a node keeps it", [pool(nodes=2)], standalone(request(count=8)), 2),
    ("a pod of 4 of 8 GPUs shares: two to a node", [pool(nodes=2)], standalone(request(count=4)), 4),
], ids=lambda v: v if isinstance(v, str) else "")
def test_who_shares_nodes(name: str, pools: list[dict[str, Any]], engine: dict[str, Any], want: int) -> None:
    placement = place(fleet(cluster("a", *pools)), workloads(deployment("m", engine, replicas=8)))
    assert placement.deployments["ml/m"].scheduled == want


@pytest.mark.parametrize(("engine", "why"), [
    (standalone(request(count=8)), "it claims every gpu of a node"),
    (gang(), "a Leader + Worker gang keeps a node per pod"),
])
def test_explain_says_why_a_pod_was_refused_a_shared_node(engine: dict[str, Any], why: str) -> None:
    text = "\n".join(explain(fleet(cluster("a", pool(nodes=4))), workloads(deployment("m", engine)), "ml/m").lines())
    assert f"engine ({engine['members'][0]['role']}) on gpu takes whole nodes: {why}" in text


def test_explain_says_whole_node_pods_need_nodes_beside_the_shared_ones() -> None:
    f = fleet(cluster("a", pool(nodes=2)))
    w = workloads(deployment("a-small", replicas=2), deployment("z-whole", standalone(request(count=8))))
    text = "\n".join(explain(f, w, "ml/z-whole").lines())
    # The two shared pods need one node; beside a whole-node pod they need three: 2 more, 1 free.
    assert "had too few free nodes (needs 2, has 1)" in text
    assert "shared pods could each be on a different node" in text


def test_old_placement_documents_read_as_whole_nodes() -> None:
    """A document written before sharing (no sharedPods, no devices) keeps its whole-node counts."""
    old = {"replicas": [{"deployment": "ml/m", "cluster": "a", "index": 0, "engines": {"engine": {
        "Standalone": {"pool": "gpu", "nodes": 1, "requests": []}}}}], "deployments": {}}
    assert pool_use(Placement.from_json(old)) == {("a", "gpu"): 1}


def test_a_retained_whole_node_replica_stays_when_its_pool_turns_shared() -> None:
    f_before = fleet(cluster("a", exclusive_pool(nodes=1)))
    before = place(f_before, workloads(deployment("m")))
    after = place(fleet(cluster("a", pool(nodes=1))), workloads(deployment("m", replicas=3)), before)
    assert [(r.cluster, r.index) for r in after.replicas] == [("a", 0), ("a", 1), ("a", 2)]
    assert pool_use(after) == {("a", "gpu"): 1}

