"""`compose.stranded.with_stranded`: a cluster holding stranded replicas gets exactly the objects the
previous placement rendered there (nothing to change, so nothing asked of an unreachable cluster),
while routing, endpoints and the other clusters follow the live placement."""

from __future__ import annotations

from modelplane.compose import render
from modelplane.compose.stranded import with_stranded
from modelplane.scheduling import place
from tests.compose.helpers import FLEET, deployment
from modelplane.api import Manifests, Workloads


def test_the_stranded_cluster_keeps_its_objects_and_routing_follows_the_live_placement() -> None:
    manifests = Manifests(FLEET, Workloads(deployments=(deployment("qwen", replicas=2),)))
    before = place(FLEET, manifests.workloads)
    clusters = sorted({r.cluster for r in before.replicas})
    assert len(clusters) == 2, "the test needs a replica on each of two clusters"
    gone = clusters[0]
    live = before.model_copy(update={"replicas": tuple(r for r in before.replicas if r.cluster != gone)})
    stranded = tuple(r for r in before.replicas if r.cluster == gone)
    previous, now, plain = render(manifests, before), with_stranded(manifests, live, stranded), render(manifests, live)
    assert now.clusters[gone] == previous.clusters[gone]
    assert plain.clusters.get(gone, ()) != previous.clusters[gone]
    assert {c: o for c, o in now.clusters.items() if c != gone} == {c: o for c, o in plain.clusters.items() if c != gone}
    assert (now.gateway, now.endpoints, now.addons) == (plain.gateway, plain.endpoints, plain.addons)
    assert with_stranded(manifests, live, ()) == plain
