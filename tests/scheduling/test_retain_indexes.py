"""The shortcuts retain and fill take give what the rules give, worked out the long way:

- `Run.eligible` (clusters indexed by label and by taints) is the Clusters rule (`Run.ineligible`)
  asked of every cluster, for a new replica and for a kept one;
- `_Doc.trusted` builds the document models as `model_construct` does, and the scheduler gives it
  every field (a field added to a model and not to its `trusted` call fails here);
- a retained replica carries what a new placement on the same pools carries (`Placements.of`).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, ModelDeployment, Workloads
from modelplane.scheduling import place
from modelplane.scheduling.placement import MemberPlacement, Replica, ResolvedRequest
from modelplane.scheduling.retain import as_candidate
from modelplane.scheduling.run import Run
from tests.builders import cache, cluster, deployment, fleet, gang, gpu, klass, pool, request, standalone

HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
ADA = 'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"'
LABELS = {"region": ("eu", "us", "ap"), "tier": ("prod", "dev")}
TAINTS = [{"key": "dedicated", "effect": "NoSchedule"}, {"key": "dedicated", "value": "batch", "effect": "NoExecute"},
          {"key": "gpu", "effect": "NoSchedule"}]
TOLERATIONS = [{"key": "dedicated", "operator": "Exists"}, {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
               {"key": "dedicated", "value": "batch", "effect": "NoExecute"}, {"operator": "Exists"}]


def _labels(draw: st.DrawFn) -> dict[str, str]:
    return {key: draw(st.sampled_from(values)) for key, values in LABELS.items() if draw(st.booleans())}


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[InferenceCluster], list[ModelDeployment], Workloads]:
    clusters = [cluster(f"c{index}", pool(), labels=_labels(draw),
                        taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=str)))
                for index in range(draw(st.integers(1, 8)))]
    caches, ds = [], []
    for index in range(draw(st.integers(1, 6))):
        name = None
        if draw(st.booleans()):
            name = f"w{index}"
            caches.append(cache(name, _labels(draw) or None))
        ds.append(deployment(f"d{index}", selector=_labels(draw) or None, cache=name,
                             tolerations=draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2, unique_by=str))))
    return clusters, ds, Workloads(deployments=tuple(ds), caches=tuple(caches))


@settings(max_examples=150, deadline=None)
@given(fleets())
def test_the_eligible_clusters_are_those_the_clusters_rule_admits(drawn) -> None:
    clusters, ds, workloads = drawn
    run = Run(fleet(*clusters), workloads)
    for d in ds:
        for new in (True, False):
            expected = {c.position for c in run.snapshot.clusters if run.ineligible(d, c, new=new) is None}
            assert run.eligible(d, new=new) == expected, (d.key, new)


def test_eligibility_by_hand() -> None:
    """Five clusters: a selects region=eu (a, c, e carry it), its cache stages in tier=prod (c, d, e);
    e is tainted NoSchedule, which a does not tolerate: only c is left for a new replica, c and e
    keep one. b tolerates it and selects nothing: every cluster but d, whose NoExecute taint it does
    not tolerate."""
    clusters = [cluster("a", labels={"region": "eu"}), cluster("b", labels={"region": "us"}),
                cluster("c", labels={"region": "eu", "tier": "prod"}),
                cluster("d", labels={"tier": "prod"}, taints=[{"key": "x", "effect": "NoExecute"}]),
                cluster("e", labels={"region": "eu", "tier": "prod"}, taints=[{"key": "x", "effect": "NoSchedule"}])]
    a = deployment("a", selector={"region": "eu"}, cache="w")
    b = deployment("b", tolerations=[{"key": "x", "effect": "NoSchedule", "operator": "Exists"}])
    run = Run(fleet(*clusters), Workloads(deployments=(a, b), caches=(cache("w", {"tier": "prod"}),)))
    names = {c.position: c.name for c in run.snapshot.clusters}
    assert {names[p] for p in run.eligible(a)} == {"c"}
    assert {names[p] for p in run.eligible(b)} == {"a", "b", "c", "e"}
    assert {names[p] for p in run.eligible(a, new=False)} == {"c", "e"}, "NoSchedule keeps a kept replica"


def _assert_complete(model: MemberPlacement | Replica | ResolvedRequest) -> None:
    assert list(model.__dict__) == list(type(model).model_fields), type(model).__name__
    assert model.model_fields_set == set(type(model).model_fields), type(model).__name__
    assert model == type(model).model_validate(model.model_dump(by_alias=True)), type(model).__name__


def test_the_scheduler_gives_every_field_of_what_it_builds_in_order() -> None:
    classes = (klass("h100", gpu()), klass("l4", gpu(memory="23034Mi", count=1, arch="Ada Lovelace")))
    f = fleet(cluster("a", pool("big", cls="h100", nodes=4), pool("small", cls="l4", nodes=2, sharing="Shared")),
              classes=classes)
    w = Workloads(deployments=(
        deployment("gang", gang(request(HOPPER), workers=1)),
        deployment("one", standalone(request(ADA)), replicas=2)))
    placement = place(f, w)
    assert len(placement.replicas) == 3
    again = place(f, w, placement)
    for replica in (*placement.replicas, *again.replicas):
        _assert_complete(replica)
        for member in replica.members():
            _assert_complete(member)
            for resolved in member.requests:
                _assert_complete(resolved)
    assert again.to_json() == placement.to_json()


def test_trusted_is_model_construct() -> None:
    fields = {"pool": "p", "nodes": 2, "shared_pods": 0, "devices": (), "requests": (), "surge": True}
    made, constructed = MemberPlacement.trusted(**fields), MemberPlacement.model_construct(**fields)
    assert made == constructed and repr(made) == repr(constructed)
    assert made.model_dump_json(by_alias=True) == constructed.model_dump_json(by_alias=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.sampled_from(["Exclusive", "Shared"]), st.booleans())
def test_a_retained_replica_carries_what_a_new_placement_on_its_pools_carries(replicas, sharing, split) -> None:
    classes = (klass("h100", gpu()), klass("l4", gpu(memory="23034Mi", count=1, arch="Ada Lovelace")))
    f = fleet(cluster("a", pool("big", cls="h100", nodes=6, sharing=sharing), pool("small", cls="l4", nodes=3)),
              cluster("b", pool("big", cls="h100", nodes=6)), classes=classes)
    engine = gang(request(HOPPER), workers=1) if split else standalone(request(HOPPER, count=2), copies=2)
    w = Workloads(deployments=(deployment("d", engine, replicas=replicas),))
    placement = place(f, w)
    run = Run(f, w)
    for replica in placement.replicas:
        candidate = as_candidate(run, replica)
        assert candidate is not None
        d, view = w.deployments[0], run.snapshot.cluster(replica.cluster)
        assert view is not None
        for e in d.spec.engines:
            pools = tuple(view.pool(replica.engines[e.name][m.role].pool) for m in e.members)
            assert candidate.fit.engines[e.name] == run.placements.of(e, pools)  # type: ignore[arg-type]
        assert candidate.fit.engines == replica.engines
