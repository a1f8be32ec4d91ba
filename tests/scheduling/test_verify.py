"""`scheduling.verify` agrees with the planner (hypothesis, on the random fleets of test_properties):
the planner's own output verifies, and a document verifies against a changed fleet exactly when
re-planning with it as previous keeps every one of its replicas where it was."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import Fleet, Workloads
from modelplane.scheduling.verify import verify
from tests.builders import cluster, pool
from tests.scheduling.test_properties import CLASSES, SETTINGS, clusters, deployments, plan


def slots(placement):
    return {replica.slot: replica.engines for replica in placement.replicas}


@SETTINGS
@given(clusters(), deployments())
def test_the_planners_own_placement_verifies(cs, ds) -> None:
    placement = plan(cs, ds)
    assert verify(Fleet(clusters=tuple(cs), classes=CLASSES), Workloads(deployments=tuple(ds)), placement) == []


@SETTINGS
@given(clusters(), deployments(), st.data())
def test_a_placement_verifies_on_a_shrunk_fleet_exactly_when_replanning_keeps_it(cs, ds, data) -> None:
    first = plan(cs, ds)
    shrunk = [cluster(c.name, *[pool(p.name, cls=p.class_name, nodes=data.draw(st.integers(0, p.node_count)))
                                for p in c.spec.node_pools], labels=c.labels) for c in cs]
    found = verify(Fleet(clusters=tuple(shrunk), classes=CLASSES), Workloads(deployments=tuple(ds)), first)
    replanned = plan(shrunk, ds, first)
    kept = all(slots(replanned).get(slot) == engines for slot, engines in slots(first).items())
    assert (found == []) == kept, found
