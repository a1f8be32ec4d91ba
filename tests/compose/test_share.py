"""`compose.share.cluster_share`: a workload cluster's share of the manifests renders, for that cluster,
exactly what the whole manifests render there (its objects and its serving stack), given a placement of
only its replicas, which is what the split layout's workload stack renders from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import Manifests, dump_objects, load, load_objects
from modelplane.compose import render
from modelplane.compose.share import cluster_share
from modelplane.scheduling import Placement, place

ROOT = Path(__file__).resolve().parents[2]
Edit = Callable[[list[dict[str, Any]]], None]


def no_cache_selector(objects: list[dict[str, Any]]) -> None:
    """examples/multi-cloud with ModelCache kimi-k2 staged by its users (no clusterSelector of its own):
    kimi-k2-instruct selects every cluster, so the cache is staged on every one."""
    cache = next(o for o in objects if o["kind"] == "ModelCache" and o["metadata"]["name"] == "kimi-k2")
    del cache["spec"]["clusterSelector"]


def manifests(*edits: Edit) -> Manifests:
    objects = dump_objects(load([ROOT / "examples" / "multi-cloud"]))
    for edit in edits:
        edit(objects)
    return load_objects(objects, source="objects")


def deployments(share: Manifests) -> list[str]:
    return [d.name for d in share.workloads.deployments]


CASES = {"multi-cloud": (), "a cache staged by its users": (no_cache_selector,)}


@pytest.mark.parametrize("edits", CASES.values(), ids=CASES.keys())
def test_a_share_renders_its_cluster_as_the_whole_manifests_do(edits: tuple[Edit, ...]) -> None:
    whole = manifests(*edits)
    placement = place(whole.fleet, whole.workloads)
    for cluster in whole.fleet.clusters:
        mine = Placement(replicas=tuple(r for r in placement.replicas if r.cluster == cluster.name))
        share = cluster_share(whole, cluster.name, {r.deployment for r in mine.replicas})
        expected, got = render(whole, mine), render(share, mine)
        assert got.clusters[cluster.name] == expected.clusters[cluster.name]
        assert got.addons[cluster.name] == expected.addons[cluster.name]
        assert len(share.workloads.deployments) < len(whole.workloads.deployments)


def test_a_deployment_that_stages_its_cache_on_a_cluster_stays_in_that_clusters_share() -> None:
    # Placed as FIRST in tests/pulumi/test_placement_provider.py: eks-us-west runs llama-70b-pd and qwen3-8b.
    running = {"ml-team/llama-70b-pd", "ml-team/qwen3-8b"}
    assert deployments(cluster_share(manifests(), "eks-us-west", running)) == ["llama-70b-pd", "qwen3-8b"]
    staged = cluster_share(manifests(no_cache_selector), "eks-us-west", running)
    assert deployments(staged) == ["kimi-k2-instruct", "llama-70b-pd", "qwen3-8b"]
    objects = render(staged, Placement()).clusters["eks-us-west"]
    assert any(o["kind"] == "PersistentVolumeClaim" and "kimi-k2" in o["metadata"]["name"] for o in objects)
