"""The scheduler's rules, one table row per rule (rules as numbered in issue 3 / DESIGN section 4).

Each case compares a compact projection: the (deployment, cluster, index) slots, or the pools of a
replica's members. Expected values come from the rule text; arithmetic is commented where it is
not obvious.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from modelplane.api import Fleet, Workloads
from modelplane.scheduling import Placement, place
from tests.builders import (
    cache,
    cluster,
    deployment,
    exclusive_pool,
    fabric_device,
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

NOSCHEDULE = {"key": "dedicated", "value": "frontier", "effect": "NoSchedule"}
NOEXECUTE = {"key": "maintenance", "effect": "NoExecute"}
H100 = klass("h100", gpu(memory="81559Mi", count=8))
L4 = klass("l4", gpu(memory="23034Mi", count=1, arch="Ada Lovelace"))
H200_IB = klass("h200-ib", gpu(memory="143771Mi", count=8), fabric_device())


def slots(placement: Placement) -> list[tuple[str, str, int]]:
    return [(r.deployment.split("/")[1], r.cluster, r.index) for r in placement.replicas]


def pools_of(placement: Placement, engine: str = "engine") -> list[dict[str, str]]:
    return [{str(role): m.pool for role, m in r.engines[engine].items()} for r in placement.replicas]


@dataclass
class Case:
    name: str
    fleet: Fleet
    workloads: Workloads
    want: list[tuple[str, str, int]]
    previous: list[tuple[str, str, int]] | None = None
    previous_from: Workloads | None = None
    """Plan `previous_from` first and use its placement as the previous one (a spec that changed)."""
    previous_fleet: Fleet | None = None
    notes: str = field(default="")


def run_case(case: Case) -> Placement:
    previous = None
    if case.previous_from is not None:
        previous = place(case.previous_fleet or case.fleet, case.previous_from)
        if case.previous is not None:
            assert slots(previous) == case.previous, "the setup placement is not what the case assumes"
    return place(case.fleet, case.workloads, previous)


CASES = [
    Case("a replica lands on a cluster with a matching pool",
         fleet(cluster("a")), workloads(deployment("m")), [("m", "a", 0)]),
    Case("spread before pack: two replicas go to two clusters",
         fleet(cluster("a", exclusive_pool(nodes=4)), cluster("b", exclusive_pool(nodes=4))),
         workloads(deployment("m", replicas=2)), [("m", "a", 0), ("m", "b", 0)]),
    Case("ties between equally loaded clusters go to the name first in order",
         fleet(cluster("zeta"), cluster("alpha")), workloads(deployment("m")), [("m", "alpha", 0)]),
    Case("capacity forces packing past the spread preference",
         # a has 3 nodes, b has 1: replicas 0..3 go a, b, a, a (b is full after one).
         fleet(cluster("a", exclusive_pool(nodes=3)), cluster("b", exclusive_pool(nodes=1))),
         workloads(deployment("m", replicas=4)), [("m", "a", 0), ("m", "a", 1), ("m", "a", 2), ("m", "b", 0)]),
    Case("a deployment that cannot be fully placed gets as many as fit",
         fleet(cluster("a", exclusive_pool(nodes=2))), workloads(deployment("m", replicas=5)), [("m", "a", 0), ("m", "a", 1)]),
    Case("clusterSelector keeps replicas on clusters whose labels match",
         fleet(cluster("a", labels={"region": "eu"}), cluster("b", labels={"region": "us"})),
         # b's one node has 8 GPUs: both 1-GPU replicas share it.
         workloads(deployment("m", replicas=2, selector={"region": "us"})), [("m", "b", 0), ("m", "b", 1)]),
    Case("a ModelCache's clusterSelector narrows the candidates further",
         fleet(cluster("a", labels={"tier": "prod", "region": "eu"}), cluster("b", labels={"tier": "prod"})),
         workloads(deployment("m", selector={"tier": "prod"}, cache="w"), caches=(cache("w", {"region": "eu"}),)),
         [("m", "a", 0)]),
    Case("a key the deployment and its cache set differently matches nothing",
         fleet(cluster("a", labels={"region": "eu"}), cluster("b", labels={"region": "us"})),
         workloads(deployment("m", selector={"region": "eu"}, cache="w"), caches=(cache("w", {"region": "us"}),)),
         []),
    Case("an untolerated NoSchedule taint keeps new replicas off the cluster",
         fleet(cluster("a", taints=[NOSCHEDULE]), cluster("b", exclusive_pool(nodes=2))), workloads(deployment("m", replicas=2)),
         [("m", "b", 0), ("m", "b", 1)]),
    Case("a tolerated NoSchedule taint does not",
         fleet(cluster("a", taints=[NOSCHEDULE]), cluster("b")),
         workloads(deployment("m", replicas=2, tolerations=[{"key": "dedicated", "operator": "Exists"}])),
         [("m", "a", 0), ("m", "b", 0)]),
    Case("a member without nodeSelector rides with its workers and costs nothing",
         # leader claims nothing (0 nodes) + 1 worker node x 2 copies = 2 nodes of the 2-node pool.
         fleet(cluster("a", exclusive_pool(nodes=2))), workloads(deployment("m", gang(leader_claims=False, copies=2))),
         [("m", "a", 0)]),
    Case("a gang of a leader and two workers needs three nodes",
         fleet(cluster("a", exclusive_pool(nodes=2)), cluster("b", exclusive_pool(nodes=3))),
         workloads(deployment("m", gang(workers=2))), [("m", "b", 0)]),
    Case("copies multiply a member's nodes",
         fleet(cluster("a", exclusive_pool(nodes=2)), cluster("b", exclusive_pool(nodes=3))),
         workloads(deployment("m", standalone(copies=3))), [("m", "b", 0)]),
    Case("maxNodeCount, not nodeCount, is an autoscaling pool's capacity",
         fleet(cluster("a", exclusive_pool(nodes=0, max_nodes=2))), workloads(deployment("m", replicas=3)),
         [("m", "a", 0), ("m", "a", 1)]),
    Case("one ledger across deployments: the second deployment gets what the first left",
         fleet(cluster("a", exclusive_pool(nodes=3))), workloads(deployment("x", replicas=2), deployment("y", replicas=2)),
         [("x", "a", 0), ("x", "a", 1), ("y", "a", 0)]),
    Case("a cluster taken away re-places its replicas elsewhere",
         fleet(cluster("b")), workloads(deployment("m")), [("m", "b", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m")),
         previous_fleet=fleet(cluster("a"), cluster("b"))),
    Case("a NoExecute taint drains the replica to another cluster",
         fleet(cluster("a", taints=[NOEXECUTE]), cluster("b")), workloads(deployment("m")), [("m", "b", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m")),
         previous_fleet=fleet(cluster("a"), cluster("b"))),
    Case("a NoSchedule taint added later leaves the existing replica in place",
         fleet(cluster("a", taints=[NOSCHEDULE]), cluster("b")), workloads(deployment("m")), [("m", "a", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m")),
         previous_fleet=fleet(cluster("a"), cluster("b"))),
    Case("a cluster added later does not attract existing replicas",
         fleet(cluster("a", exclusive_pool(nodes=4)), cluster("b")), workloads(deployment("m", replicas=2)),
         [("m", "a", 0), ("m", "a", 1)],
         previous=[("m", "a", 0), ("m", "a", 1)], previous_from=workloads(deployment("m", replicas=2)),
         previous_fleet=fleet(cluster("a", exclusive_pool(nodes=4)))),
    Case("scale down removes from the cluster with the most replicas, then the highest index",
         fleet(cluster("a", exclusive_pool(nodes=4)), cluster("b", exclusive_pool(nodes=1))), workloads(deployment("m", replicas=2)),
         [("m", "a", 0), ("m", "b", 0)],
         previous=[("m", "a", 0), ("m", "a", 1), ("m", "a", 2), ("m", "b", 0)],
         previous_from=workloads(deployment("m", replicas=4))),
    Case("scale up fills the least-loaded cluster with the lowest free index",
         fleet(cluster("a", exclusive_pool(nodes=4)), cluster("b", exclusive_pool(nodes=4))), workloads(deployment("m", replicas=3)),
         [("m", "a", 0), ("m", "a", 1), ("m", "b", 0)],
         previous=[("m", "a", 0), ("m", "b", 0)], previous_from=workloads(deployment("m", replicas=2))),
    Case("a retained replica that grew past its pool is re-placed; it never overcommits",
         # copies 1 -> 2: the replica on a (1 node) no longer fits there and moves to b (2 nodes).
         fleet(cluster("a", exclusive_pool(nodes=1)), cluster("b", exclusive_pool(nodes=2))),
         workloads(deployment("m", standalone(copies=2))), [("m", "b", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m", standalone(copies=1))),
         previous_fleet=fleet(cluster("a", exclusive_pool(nodes=1)), cluster("b", exclusive_pool(nodes=2)))),
    Case("a retained replica that grew but still fits stays",
         fleet(cluster("a", exclusive_pool(nodes=2)), cluster("b", exclusive_pool(nodes=2))),
         workloads(deployment("m", standalone(copies=2))), [("m", "a", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m"))),
    Case("a pool that shrank keeps its oldest replicas and re-places the newest",
         fleet(cluster("a", exclusive_pool(nodes=1)), cluster("b", exclusive_pool(nodes=1))), workloads(deployment("m", replicas=2)),
         [("m", "a", 0), ("m", "b", 0)],
         previous=[("m", "a", 0), ("m", "a", 1)], previous_from=workloads(deployment("m", replicas=2)),
         previous_fleet=fleet(cluster("a", exclusive_pool(nodes=2)))),
    Case("a retained replica whose request no longer matches its pool is re-placed",
         fleet(cluster("a", exclusive_pool(cls="l4")), cluster("b", exclusive_pool(cls="h100")), classes=(L4, H100)),
         workloads(deployment("m", standalone(request(memory_at_least("40Gi"))))), [("m", "b", 0)],
         previous=[("m", "a", 0)], previous_from=workloads(deployment("m", standalone(request(memory_at_least("20Gi")))))),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_place(case: Case) -> None:
    assert slots(run_case(case)) == case.want


def test_h100_publishing_81559Mi_does_not_satisfy_80Gi() -> None:
    """Kubernetes quantities: 80Gi is 81920Mi, so an H100 (81559Mi) fails `>= 80Gi` (issue 3)."""
    f = fleet(cluster("a", pool(cls="h100")), classes=(H100,))
    assert slots(place(f, workloads(deployment("m", standalone(request(memory_at_least("80Gi"))))))) == []
    assert slots(place(f, workloads(deployment("m", standalone(request(memory_at_least("79Gi"))))))) == [("m", "a", 0)]


def test_device_count_per_node_must_cover_the_request() -> None:
    f = fleet(cluster("a", pool("l4", cls="l4"), pool("h100", cls="h100")), classes=(L4, H100))
    placement = place(f, workloads(deployment("m", standalone(request(memory_at_least("20Gi"), count=4)))))
    assert pools_of(placement) == [{"Standalone": "h100"}]


def test_requests_of_one_member_share_the_node_devices() -> None:
    """Two requests of 4 fit an 8-GPU node; 4 + 5 do not (the Pools rule: requests share a node's devices)."""
    f = fleet(cluster("a"), classes=(H100,))
    fits = deployment("m", standalone(request(count=4, name="a"), request(count=4, name="b")))
    too_many = deployment("m", standalone(request(count=4, name="a"), request(count=5, name="b")))
    assert slots(place(f, workloads(fits))) == [("m", "a", 0)]
    assert slots(place(f, workloads(too_many))) == []


def test_an_engine_that_only_matches_synthetic_devices_is_not_placed() -> None:
    fabric_only = request('device.attributes["fabric.modelplane.ai"].type == "InfiniBand"', name="fabric")
    f = fleet(cluster("a", pool(cls="h200-ib")), classes=(H200_IB,))
    placement = place(f, workloads(deployment("m", standalone(fabric_only))))
    assert slots(placement) == []
    assert "synthetic" in placement.deployments["ml/m"].reasons[0]


def test_synthetic_matches_count_for_placement_but_are_never_claimed() -> None:
    fabric = request('device.attributes["fabric.modelplane.ai"].type == "InfiniBand"', name="fabric")
    f = fleet(cluster("a", pool(cls="h200-ib")), classes=(H200_IB,))
    placement = place(f, workloads(deployment("m", standalone(request(count=8), fabric))))
    member = placement.replicas[0].engines["engine"]["Standalone"]
    assert [r.name for r in member.requests] == ["gpu"]
    assert member.requests[0].device_class_name == "gpu.nvidia.com"


def test_an_engine_prefers_one_pool_that_hosts_every_member() -> None:
    f = fleet(cluster("a", pool("small", nodes=1), pool("big", nodes=2)))
    assert pools_of(place(f, workloads(deployment("m", gang())))) == [{"Leader": "big", "Worker": "big"}]


def test_members_split_across_pools_only_when_no_single_pool_fits() -> None:
    f = fleet(cluster("a", pool("one", nodes=1), pool("two", nodes=1)))
    assert pools_of(place(f, workloads(deployment("m", gang())))) == [{"Leader": "one", "Worker": "two"}]


def test_members_never_split_across_pools_of_different_fabrics() -> None:
    f = fleet(cluster("a", pool("one", nodes=1, fabric="InfiniBand", fabric_id="f1"),
                      pool("two", nodes=1, fabric="InfiniBand", fabric_id="f2")))
    placement = place(f, workloads(deployment("m", gang())))
    assert slots(placement) == []
    assert "fabrics" in placement.deployments["ml/m"].reasons[0]


def test_all_engines_of_a_replica_land_on_one_cluster() -> None:
    """Prefill/decode on two GPU classes: cluster a has only one class, b has both (seed 001)."""
    f = fleet(cluster("a", pool("h100", cls="h100", nodes=4)),
              cluster("b", pool("l4", cls="l4", nodes=4), pool("h100", cls="h100", nodes=4)), classes=(L4, H100))
    pd = deployment("pd", standalone(request(memory_at_least("40Gi"), count=4), name="prefill", phase="Prefill"),
                    standalone(request('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) < 0'),
                               name="decode", phase="Decode"), mode="PrefillDecode")
    placement = place(f, workloads(pd))
    assert slots(placement) == [("pd", "b", 0)]
    assert pools_of(placement, "prefill") == [{"Standalone": "h100"}]
    assert pools_of(placement, "decode") == [{"Standalone": "l4"}]


def test_retained_replicas_are_charged_before_new_ones_are_placed() -> None:
    """A deployment declared later (name sorts first) cannot take nodes an existing replica holds."""
    f = fleet(cluster("a", exclusive_pool(nodes=1)))
    before = place(f, workloads(deployment("z")))
    after = place(f, workloads(deployment("a-new"), deployment("z")), before)
    assert slots(after) == [("z", "a", 0)]
    assert after.deployments["ml/a-new"].scheduled == 0


def test_a_plan_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    f, w = fleet(cluster("a")), workloads(deployment("m"))
    assert gc.isenabled()
    place(f, w)
    assert gc.isenabled()
    gc.disable()
    try:
        place(f, w)
        assert not gc.isenabled()
    finally:
        gc.enable()
