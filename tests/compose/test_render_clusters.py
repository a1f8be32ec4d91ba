"""`render(..., clusters=...)`: only the named clusters' objects, and everything else as the whole render.

The split layout's fleet stack renders with `clusters=()` (its workload stacks render their own), so
the fleet gateway's objects, the serving stacks, the endpoints and the warnings it registers and
prints must not depend on which clusters' objects are built. The fleet gateway's cluster is the case
to watch: its Namespaces are left out where that cluster's own objects already hold them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.compose import render
from modelplane.scheduling import place
from tests.compose.test_examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("example", EXAMPLES)
def test_rendering_some_clusters_changes_nothing_but_which_clusters_objects_are_there(example: str) -> None:
    manifests = load([ROOT / "examples" / example])
    placement = place(manifests.fleet, manifests.workloads)
    whole = render(manifests, placement)
    names = sorted(whole.clusters)
    host = manifests.fleet.gateway.host if manifests.fleet.gateway is not None else None
    subsets = [(), *([name] for name in names), [name for name in names if name != host], names]
    for subset in subsets:
        got = render(manifests, placement, clusters=subset)
        assert got.clusters == {name: whole.clusters[name] for name in subset}, subset
        assert replace(got, clusters={}) == replace(whole, clusters={}), subset


def test_the_fleet_gateway_still_leaves_out_the_namespaces_its_cluster_holds() -> None:
    # examples/multi-cloud: the fleet gateway runs on a workload cluster that runs replicas of ml-team.
    manifests = load([ROOT / "examples" / "multi-cloud"])
    placement = place(manifests.fleet, manifests.workloads)
    host = manifests.fleet.gateway.host
    assert any(r.cluster == host for r in placement.replicas), "the case needs replicas on the gateway's cluster"
    namespaces = [o["metadata"]["name"] for o in render(manifests, placement, clusters=()).gateway
                  if o["kind"] == "Namespace"]
    assert "ml-team" not in namespaces, "ml-team is the gateway cluster's own: its workload stack owns it"
