"""Property-based tests of the invariants in `place.py`'s docstring, over random fleets and deployments.

- no pool is ever overcommitted (retained replicas included);
- permuting the input order changes nothing;
- re-planning with the previous result as state moves no replica;
- adding clusters or unrelated deployments moves no existing replica.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import Fleet, InferenceCluster, ModelDeployment, Workloads
from modelplane.scheduling import Placement, place
from tests.builders import cluster, deployment, fabric_device, gang, gpu, klass, memory_at_least, pool, request, standalone

CLASSES = (
    klass("l4", gpu(memory="23034Mi", count=1, arch="Ada Lovelace")),
    klass("a100", gpu(memory="81920Mi", count=8, arch="Ampere")),
    klass("h100", gpu(memory="81559Mi", count=8)),
    klass("h200-ib", gpu(memory="143771Mi", count=8), fabric_device()),
)
MEMORY = ("16Gi", "20Gi", "40Gi", "80Gi", "120Gi")
REGIONS = ("eu", "us")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn, prefix: str = "c") -> list[InferenceCluster]:
    made = []
    for index in range(draw(st.integers(1, 4))):
        pools = []
        for p in range(draw(st.integers(1, 3))):
            nodes = draw(st.integers(0, 4))
            grow = draw(st.sampled_from([None, nodes, nodes + 2]))
            fabric = draw(st.sampled_from([None, "f1", "f2"]))
            pools.append(pool(f"p{p}", cls=draw(st.sampled_from([c.name for c in CLASSES])), nodes=nodes,
                              max_nodes=grow if grow else None, fabric="InfiniBand" if fabric else None,
                              fabric_id=fabric))
        taints = [{"key": "dedicated", "effect": draw(st.sampled_from(["NoSchedule", "NoExecute"]))}] \
            if draw(st.booleans()) and draw(st.booleans()) else []
        made.append(cluster(f"{prefix}{index}", *pools, labels={"region": draw(st.sampled_from(REGIONS))},
                            taints=taints))
    return made


@st.composite
def engines(draw: st.DrawFn, name: str) -> dict[str, Any]:
    req = request(memory_at_least(draw(st.sampled_from(MEMORY))), count=draw(st.sampled_from([1, 2, 8])))
    copies = draw(st.integers(1, 2))
    if draw(st.booleans()):
        return standalone(req, name=name, copies=copies)
    return gang(req, name=name, copies=copies, workers=draw(st.integers(1, 2)), leader_claims=draw(st.booleans()))


@st.composite
def deployments(draw: st.DrawFn, prefix: str = "d") -> list[ModelDeployment]:
    made = []
    for index in range(draw(st.integers(1, 5))):
        parts = [draw(engines("e0"))]
        if draw(st.booleans()) and draw(st.booleans()):
            parts.append(draw(engines("e1")))
        selector = {"region": draw(st.sampled_from(REGIONS))} if draw(st.booleans()) else None
        tolerations = [{"key": "dedicated", "operator": "Exists"}] if draw(st.booleans()) else None
        made.append(deployment(f"{prefix}{index}", *parts, replicas=draw(st.integers(1, 4)), selector=selector,
                               tolerations=tolerations))
    return made


def plan(cs: list[InferenceCluster], ds: list[ModelDeployment], previous: Placement | None = None) -> Placement:
    return place(Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds)), previous)


def assert_no_pool_overcommitted(cs: list[InferenceCluster], placement: Placement) -> None:
    capacity = {(c.name, p.name): p.capacity for c in cs for p in c.spec.node_pools}
    used: dict[tuple[str, str], int] = {}
    for replica in placement.replicas:
        for name, nodes in replica.pools().items():
            used[(replica.cluster, name)] = used.get((replica.cluster, name), 0) + nodes
    assert all(used[key] <= capacity[key] for key in used), (used, capacity)


@SETTINGS
@given(clusters(), deployments(), st.randoms(use_true_random=False))
def test_no_pool_is_overcommitted_and_order_does_not_matter(cs, ds, rng) -> None:
    placement = plan(cs, ds)
    assert_no_pool_overcommitted(cs, placement)
    assert all(s.scheduled <= s.desired for s in placement.deployments.values())
    shuffled_clusters, shuffled_deployments = cs[:], ds[:]
    rng.shuffle(shuffled_clusters)
    rng.shuffle(shuffled_deployments)
    assert plan(shuffled_clusters, shuffled_deployments).to_json() == placement.to_json()


@SETTINGS
@given(clusters(), deployments())
def test_replanning_with_the_previous_placement_moves_nothing(cs, ds) -> None:
    first = plan(cs, ds)
    assert plan(cs, ds, first).to_json() == first.to_json()


@SETTINGS
@given(clusters(), deployments(), clusters(prefix="n"), deployments(prefix="x"))
def test_new_clusters_and_unrelated_deployments_move_no_existing_replica(cs, ds, new_cs, new_ds) -> None:
    first = plan(cs, ds)
    second = plan(cs + new_cs, ds + new_ds, first)
    kept = [replica.model_dump() for replica in second.replicas]
    assert all(replica.model_dump() in kept for replica in first.replicas)
    assert_no_pool_overcommitted(cs + new_cs, second)


@SETTINGS
@given(clusters(), deployments(), st.data())
def test_a_changed_fleet_never_overcommits_retained_replicas(cs, ds, data) -> None:
    """Shrink pools and grow deployments after placing: whatever stays must still fit."""
    first = plan(cs, ds)
    shrunk = [cluster(c.name, *[pool(p.name, cls=p.class_name, nodes=data.draw(st.integers(0, p.node_count)))
                                for p in c.spec.node_pools], labels=c.labels) for c in cs]
    grown = [d.model_copy(update={"spec": d.spec.model_copy(update={"replicas": d.spec.replicas + 1})}) for d in ds]
    assert_no_pool_overcommitted(shrunk, plan(shrunk, grown, first))
