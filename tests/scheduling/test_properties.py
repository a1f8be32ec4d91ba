"""Property-based tests of the invariants in `scheduler.py`'s docstring, over random fleets and deployments.

- no pool is ever overcommitted (retained replicas included);
- permuting the input order changes nothing;
- re-planning with the previous result as state moves no replica;
- adding clusters or unrelated deployments moves no existing replica;
- a split engine charges each pool exactly what its members cost there, and is split only when no
  single pool that fits the whole engine had room for it;
- the report's reasons for a deployment (worked out by kind of cluster) are the full diagnosis';
- an engine's shape, worked out once per shape key, is the shape worked out for it alone.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import Fleet, InferenceClass, InferenceCluster, ModelDeployment, Workloads
from modelplane.api.workload import NodeSelector
from modelplane.scheduling import Placement, place
from modelplane.scheduling import plan as plan_with_run
from modelplane.scheduling.diff import pool_use
from modelplane.scheduling.engines import shape_of
from modelplane.scheduling.explanation import Briefing, diagnose
from modelplane.scheduling.run import Run
from tests.builders import (
    cluster,
    deployment,
    fabric_device,
    gang,
    gpu,
    klass,
    member,
    memory_at_least,
    pool,
    request,
    standalone,
)

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
    """Every pool's need (whole nodes plus what its shared pods need, read from the document) is
    within its capacity; that the need is enough is test_packing.py's property."""
    capacity = {(c.name, p.name): p.capacity for c in cs for p in c.spec.node_pools}
    used = pool_use(placement)
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
def test_an_engines_shape_shared_by_key_is_its_own(cs, ds) -> None:
    """`Run.shape` works a shape out once per `shape_key` (the floors of MEMORY that no class's device
    tells apart share one); each engine's shape is what `shape_of` gives it on a run of its own."""
    fleet, work = Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds))
    run = Run(fleet, work)
    for engine in (engine for d in ds for engine in d.spec.engines):
        alone = Run(fleet, work)
        assert run._shape_list[run.shape(engine)] == shape_of(engine, alone.matcher, alone.snapshot)


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


# Split engines: Leaders and Workers that ask for different hardware. Whether a member fits a class
# is worked out here from the memory each class publishes, independently of the scheduler's CEL.
SPLIT_CLASSES = {  # class: (memory in Mi, GPUs per node)
    "l4": (23034, 1),
    "h100": (81559, 8),
    "a100": (81920, 8),
}
SPLIT_REQUESTS = {  # selector: which memory satisfies it
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) < 0': lambda mi: mi < 40 * 1024,
    memory_at_least("20Gi"): lambda mi: mi >= 20 * 1024,
    memory_at_least("40Gi"): lambda mi: mi >= 40 * 1024,
    memory_at_least("80Gi"): lambda mi: mi >= 80 * 1024,
}


@st.composite
def split_members(draw: st.DrawFn) -> dict[str, Any] | None:
    """A member's request (selector, count), or None for a Leader that claims nothing."""
    if draw(st.integers(0, 4)) == 0:
        return None
    return request(draw(st.sampled_from(sorted(SPLIT_REQUESTS))), count=draw(st.sampled_from([1, 1, 8])))


@st.composite
def split_fleets(draw: st.DrawFn) -> tuple[list[InferenceCluster], list[ModelDeployment]]:
    cs = []
    for index in range(draw(st.integers(1, 3))):
        pools = [pool(f"p{p}", cls=draw(st.sampled_from(sorted(SPLIT_CLASSES))), nodes=draw(st.integers(0, 3)),
                      fabric="InfiniBand" if (fabric := draw(st.sampled_from([None, None, "f1", "f2"]))) else None,
                      fabric_id=fabric)
                 for p in range(draw(st.integers(2, 4)))]
        cs.append(cluster(f"c{index}", *pools))
    ds = []
    for index in range(draw(st.integers(1, 4))):
        leader, worker = draw(split_members()), draw(split_members()) or request()
        members = [member("Leader", leader) if leader else member("Leader", claims=False),
                   member("Worker", worker, nodes=draw(st.integers(1, 2)))]
        ds.append(deployment(f"d{index}", {"name": "gang", "copies": draw(st.integers(1, 2)), "members": members},
                             replicas=draw(st.integers(1, 3))))
    return cs, ds


def fits_class(selector: NodeSelector | None, class_name: str) -> bool:
    if selector is None:
        return True
    memory, count = SPLIT_CLASSES[class_name]
    return all(r.count <= count and all(SPLIT_REQUESTS[s.cel](memory) for s in r.selectors) for r in selector.devices)


@SETTINGS
@given(split_fleets())
def test_a_split_engine_charges_each_pool_its_members_cost_and_skips_no_single_pool_with_room(drawn) -> None:
    cs, ds = drawn
    placement, run = plan_with_run(Fleet(clusters=tuple(cs), classes=split_classes()), Workloads(deployments=tuple(ds)))
    by_key = {d.key: d for d in ds}
    pools = {(c.name, p.name): p for c in cs for p in c.spec.node_pools}
    used: dict[tuple[str, str], int] = {}
    for replica in placement.replicas:
        engine = by_key[replica.deployment].spec.engines[0]
        cost = {m.role: m.pods * engine.copies if m.node_selector else 0 for m in engine.members}
        placed = replica.engines["gang"]
        assert {role: m.nodes for role, m in placed.items()} == cost
        for role, m in placed.items():
            used[(replica.cluster, m.pool)] = used.get((replica.cluster, m.pool), 0) + m.nodes
        if len({m.pool for m in placed.values()}) == 1:
            continue
        # A split: every single pool of the cluster that fits the whole engine lacked room for it.
        # Free nodes only shrink during a run, so room at the end means room when it was placed.
        for (name, _), p in pools.items():
            if name == replica.cluster and all(fits_class(m.node_selector, p.class_name) for m in engine.members):
                assert p.capacity - run.ledger.used((name, p.name)) < sum(cost.values()), (replica, p.name)
    assert {key: run.ledger.used(key) for key in pools if run.ledger.used(key)} == used


def split_classes() -> tuple[InferenceClass, ...]:
    return tuple(klass(name, gpu(memory=f"{memory}Mi", count=count)) for name, (memory, count) in SPLIT_CLASSES.items())


@SETTINGS
@given(clusters(), deployments(), st.booleans())
def test_the_briefing_gives_the_full_diagnosis_reasons(cs, ds, split) -> None:
    """`Briefing` (what the report keeps for a short deployment) words the same lines as `diagnose(...).brief()`,
    the reasons of a verdict per cluster, for every deployment against the final ledger."""
    if split:
        cs, ds = split_sample(cs, ds)
    fleet = Fleet(clusters=tuple(cs), classes=split_classes() if split else CLASSES)
    _, run = plan_with_run(fleet, Workloads(deployments=tuple(ds)))
    briefing = Briefing(run)
    for deployment in run.workloads.deployments:
        assert briefing.brief(deployment).lines() == diagnose(run, deployment, {}).brief().lines()


def split_sample(cs: list[InferenceCluster], ds: list[ModelDeployment]) -> tuple[list, list]:
    """The same clusters on the split classes, and gangs whose members ask for different hardware."""
    names = sorted(SPLIT_CLASSES)
    moved = [cluster(c.name, *[pool(p.name, cls=names[i % len(names)], nodes=p.node_count)
                              for i, p in enumerate(c.spec.node_pools)], labels=c.labels) for c in cs]
    selectors = sorted(SPLIT_REQUESTS)
    gangs = [deployment(d.name, {"name": "gang", "members": [
        member("Leader", request(selectors[i % len(selectors)])),
        member("Worker", request(selectors[(i + 1) % len(selectors)]), nodes=1)]}, replicas=d.spec.replicas)
        for i, d in enumerate(ds)]
    return moved, gangs
