"""Engines split across pools (issue 9, part 1), and the scale-down tie-break.

The seeds' rule: the scheduler "places the member on a pool that satisfies it, preferring one pool
for the whole engine and splitting members across pools only when no pool satisfies them all".
Each case is a gang whose Leader and Worker ask for different hardware (or the same) on pools of
one cluster; expected pools follow from that rule, the fabric rule (a gang spans one fabric; pools
without a fabric share the cluster's default network) and the ledger (no pool overcommitted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from modelplane.api import Fleet, Workloads
from modelplane.scheduling import explain, place
from tests.builders import (
    cluster,
    deployment,
    exclusive_pool,
    fleet,
    gpu,
    klass,
    member,
    memory_at_least,
    pool,
    request,
    workloads,
)

SMALL = klass("small", gpu(memory="23034Mi", count=1, arch="Ada Lovelace"))  # an L4: Leader hardware
BIG = klass("big", gpu(memory="81559Mi", count=8))  # an H100: Worker hardware
CLASSES = (SMALL, BIG)
LEADER_ONLY = request('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) < 0')
WORKER_ONLY = request(memory_at_least("40Gi"), count=8)
ANY_GPU = request(memory_at_least("20Gi"))


def split_gang(leader: dict[str, Any] | None = LEADER_ONLY, worker: dict[str, Any] = WORKER_ONLY,
               workers: int = 1, copies: int = 1) -> dict[str, Any]:
    lead = member("Leader", leader) if leader is not None else member("Leader", claims=False)
    return {"name": "gang", "copies": copies, "members": [lead, member("Worker", worker, nodes=workers)]}


def ib(name: str, cls: str, fabric_id: str, nodes: int = 1) -> dict[str, Any]:
    return pool(name, cls=cls, nodes=nodes, fabric="InfiniBand", fabric_id=fabric_id)


@dataclass(frozen=True)
class Case:
    name: str
    fleet: Fleet
    workloads: Workloads
    want: dict[str, str] | None
    """Each member's pool, or None when the replica cannot be placed."""
    used: dict[str, int] | None = None
    """Nodes charged per pool, when the case is about capacity."""


CASES = [
    Case("a Leader that fits only pool A and a Worker that fits only pool B split over A and B",
         # Neither pool declares a fabric: both are on the cluster's default network, so they pair.
         fleet(cluster("a", pool("lead", cls="small"), pool("work", cls="big")), classes=CLASSES),
         workloads(deployment("m", split_gang())), {"Leader": "lead", "Worker": "work"},
         used={"lead": 1, "work": 1}),
    Case("pool order does not matter: the Worker's pool listed first still pairs",
         fleet(cluster("a", pool("work", cls="big"), pool("lead", cls="small")), classes=CLASSES),
         workloads(deployment("m", split_gang())), {"Leader": "lead", "Worker": "work"}),
    Case("a claimless Leader rides with its Worker on one pool and costs nothing",
         fleet(cluster("a", pool("lead", cls="small"), pool("work", cls="big", nodes=2)), classes=CLASSES),
         workloads(deployment("m", split_gang(leader=None, workers=2))), {"Leader": "work", "Worker": "work"},
         used={"work": 2}),
    Case("two pools on one InfiniBand fabric pair",
         fleet(cluster("a", ib("lead", "small", "f1"), ib("work", "big", "f1")), classes=CLASSES),
         workloads(deployment("m", split_gang())), {"Leader": "lead", "Worker": "work"}),
    Case("of three pools, the only pairing on one fabric is chosen",
         # lead-f1 and lead-f2 fit the Leader, work-f2 the Worker: only lead-f2 + work-f2 share a fabric.
         fleet(cluster("a", ib("lead-f1", "small", "f1"), ib("work-f2", "big", "f2"), ib("lead-f2", "small", "f2")),
               classes=CLASSES),
         workloads(deployment("m", split_gang())), {"Leader": "lead-f2", "Worker": "work-f2"}),
    Case("a pool on a fabric does not pair with a pool on none",
         fleet(cluster("a", ib("lead", "small", "f1"), pool("work", cls="big")), classes=CLASSES),
         workloads(deployment("m", split_gang())), None),
    Case("a split that needs both pools' capacity takes the pairing with room",
         # Leader 1 node + Worker 2 nodes = 3; no pool has 3. Pairs in pool order: Leader on one (1 free)
         # and Worker on two (1 free, needs 2) does not fit; Leader on two and Worker on one does.
         fleet(cluster("a", pool("one", cls="big", nodes=2), pool("two", cls="big", nodes=1)), classes=CLASSES),
         workloads(deployment("m", split_gang(leader=ANY_GPU, worker=ANY_GPU, workers=2))),
         {"Leader": "two", "Worker": "one"}, used={"one": 2, "two": 1}),
    Case("copies multiply each member's cost on its own pool",
         fleet(cluster("a", pool("lead", cls="small", nodes=2), pool("work", cls="big", nodes=4)), classes=CLASSES),
         workloads(deployment("m", split_gang(workers=2, copies=2))), {"Leader": "lead", "Worker": "work"},
         used={"lead": 2, "work": 4}),
    Case("a split is not chosen when a single pool has room for the whole engine",
         # one + two could split the gang, but three hosts both members and comes later in pool order.
         fleet(cluster("a", pool("one", cls="big"), pool("two", cls="big"), pool("three", cls="big", nodes=2)),
               classes=CLASSES),
         workloads(deployment("m", split_gang(leader=ANY_GPU, worker=ANY_GPU))),
         {"Leader": "three", "Worker": "three"}, used={"three": 2}),
    Case("a split without room on the Worker's pool is not placed",
         fleet(cluster("a", pool("lead", cls="small"), pool("work", cls="big")), classes=CLASSES),
         workloads(deployment("m", split_gang(workers=2))), None),
    Case("a Worker that fits no pool leaves the gang unplaced",
         fleet(cluster("a", pool("lead", cls="small"), pool("lead-2", cls="small")), classes=CLASSES),
         workloads(deployment("m", split_gang())), None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_split(case: Case) -> None:
    placement = place(case.fleet, case.workloads)
    got = [{str(role): m.pool for role, m in r.engines["gang"].items()} for r in placement.replicas]
    assert got == ([case.want] if case.want is not None else [])
    if case.used is not None:
        assert placement.replicas[0].pools() == case.used


def test_a_split_member_carries_its_own_pools_claim() -> None:
    f = fleet(cluster("a", pool("lead", cls="small"), pool("work", cls="big", nodes=2)), classes=CLASSES)
    members = place(f, workloads(deployment("m", split_gang(workers=2)))).replicas[0].engines["gang"]
    leader, worker = members["Leader"], members["Worker"]
    assert (leader.pool, leader.nodes, leader.requests[0].count) == ("lead", 1, 1)
    assert (worker.pool, worker.nodes, worker.requests[0].count) == ("work", 2, 8)


def explanation(f: Fleet, w: Workloads) -> str:
    return "\n".join(explain(f, w, "ml/m").lines())


def test_explain_names_both_pools_of_a_split_engine() -> None:
    f = fleet(cluster("a", pool("lead", cls="small", nodes=2), pool("work", cls="big", nodes=2)), classes=CLASSES)
    assert "cluster a (replica #0): another replica fits on gang: lead (Leader) + work (Worker)" in \
        explanation(f, workloads(deployment("m", split_gang())))


def test_explain_says_which_member_had_no_pool() -> None:
    f = fleet(cluster("a", pool("lead", cls="small"), pool("lead-2", cls="small")), classes=CLASSES)
    text = explanation(f, workloads(deployment("m", split_gang())))
    assert "0/1 clusters can host another replica of ml/m" in text
    assert ("engine gang: the Leader can claim on pool(s) lead, lead-2, but the Worker matches no pool of the "
            "cluster, so the engine can neither run on one pool nor split") in text
    assert "to fit: relax the Worker's device request or add a pool whose class satisfies it" in text


def test_explain_says_which_fabrics_blocked_the_pairing() -> None:
    f = fleet(cluster("a", ib("lead", "small", "f1"), ib("work", "big", "f2")), classes=CLASSES)
    text = explanation(f, workloads(deployment("m", split_gang())))
    assert ("the Leader fits pool lead (fabric InfiniBand/f1), the Worker pool work (fabric InfiniBand/f2); "
            "a gang spans one fabric") in text
    f = fleet(cluster("a", ib("lead", "small", "f1"), pool("work", cls="big")), classes=CLASSES)
    assert "the Worker pool work (no fabric)" in explanation(f, workloads(deployment("m", split_gang())))


@pytest.mark.parametrize(("clusters", "previous", "want"), [
    # Two clusters hold one replica each: scale-down removes from the later name, b.
    ({"a": 4, "b": 4}, ["a", "b"], [("a", 0)]),
    ({"b": 4, "a": 4}, ["a", "b"], [("a", 0)]),
    # Three on a, one on b (a 1-node pool), three on c; down to five: c (tied with a, named later),
    # then a (3 against c's 2).
    ({"a": 4, "b": 1, "c": 4}, ["a", "a", "a", "b", "c", "c", "c"],
     [("a", 0), ("a", 1), ("b", 0), ("c", 0), ("c", 1)]),
], ids=["two clusters tied", "declared in another order", "ties again after the first removal"])
def test_scale_down_ties_remove_from_the_later_cluster_name(clusters: dict[str, int], previous: list[str],
                                                            want: list[tuple[str, int]]) -> None:
    f = fleet(*(cluster(name, exclusive_pool(nodes=nodes)) for name, nodes in clusters.items()))
    before = place(f, workloads(deployment("m", replicas=len(previous))))
    assert sorted(r.cluster for r in before.replicas) == previous, "the setup is not what the case assumes"
    after = place(f, workloads(deployment("m", replicas=len(want))), before)
    assert [(r.cluster, r.index) for r in after.replicas] == want
