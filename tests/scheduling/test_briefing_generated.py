"""The report's reasons on the benchmark's generated fleets (issue 26).

`Briefing` shares work between short deployments (ineligible clusters per eligibility key, a kind of
replica's outcome per cluster, pool misses per class); the reference it must equal is `diagnose`,
which works out a full verdict on every cluster for one deployment. Both generated shapes, with
demand over capacity so that many deployments are short. The digests pin `place`'s JSON to what
main gave before the briefing shared work (commit dbc9f39, the same generator and arguments).
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from modelplane.api import load_sources
from modelplane.api.manifests import Manifests
from modelplane.report.json_text import indented
from modelplane.scheduling import place
from modelplane.scheduling import plan as plan_with_run
from modelplane.scheduling.explanation import Briefing, diagnose
from modelplane.scheduling.reasons import Code
from tests.builders import cluster, deployment, fleet, gpu, klass, pool, request, standalone, workloads

ADA = 'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"'
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "plan_fleet.py"
DIGESTS = {  # sha256 of the JSON text of place(...) at 20 x 200, load 1.1, seed 5, on main dbc9f39
    "standard": "e6ae9fc47ca9c6edff255b88aaf9dd47de4f87a6a60a31b09a3b87a41b791781",
    "varied": "cfef011c091a2b8b45146c52f5ccc8a4b93aecd15bcedaf4341da003113ad316",
}


@cache
def _fleet(shape: str) -> Manifests:
    spec = importlib.util.spec_from_file_location("plan_fleet", BENCHMARK)
    module: ModuleType = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return load_sources([("fleet.yaml", module.SHAPES[shape](20, 200, 1.1, 5))])


@pytest.mark.parametrize("shape", ["standard", "varied"])
def test_the_placement_of_a_generated_fleet_is_the_one_main_gave(shape: str) -> None:
    manifests = _fleet(shape)
    placement = place(manifests.fleet, manifests.workloads)
    assert hashlib.sha256(indented(placement.to_json()).encode()).hexdigest() == DIGESTS[shape]
    again = place(manifests.fleet, manifests.workloads, placement)
    assert again.to_json() == placement.to_json()


@pytest.mark.parametrize("shape", ["standard", "varied"])
def test_every_short_deployment_is_briefed_as_its_full_diagnosis(shape: str) -> None:
    manifests = _fleet(shape)
    placement, run = plan_with_run(manifests.fleet, manifests.workloads)
    short = [d for d in manifests.workloads.deployments if placement.deployments[d.key].short]
    assert len(short) >= 10
    briefing = Briefing(run)
    for deployment in short:
        expected = diagnose(run, deployment, {}).brief().lines()
        assert briefing.brief(deployment).lines() == expected
        assert placement.deployments[deployment.key].reasons == expected


def test_deployments_of_one_eligibility_key_are_refused_with_their_own_cache() -> None:
    """Two short deployments that read the same clusters' labels but name different caches: the
    shared refusals are worded with each one's cache (`Briefing._refused`)."""
    manifests = _fleet("varied")
    placement, run = plan_with_run(manifests.fleet, manifests.workloads)
    briefing = Briefing(run)
    by_key: dict[object, dict[str, object]] = {}
    for deployment in manifests.workloads.deployments:
        cache = deployment.spec.model_cache_ref
        if cache is None or not placement.deployments[deployment.key].short:
            continue
        refused = [run.ineligible(deployment, c, new=True) for c in run.snapshot.clusters]
        if any(r is not None and r.code is Code.CACHE_NOT_STAGED for r in refused):
            by_key.setdefault(run.eligibility_key(deployment), {})[cache.name] = deployment
    pairs = [list(caches.values())[:2] for caches in by_key.values() if len(caches) > 1]
    assert pairs, "the sample has no two caches behind one eligibility key"
    for first, second in pairs:
        for deployment in (first, second):
            assert briefing.brief(deployment).lines() == diagnose(run, deployment, {}).brief().lines()
            cache = deployment.spec.model_cache_ref.name  # type: ignore[union-attr]
            assert f"do not stage ModelCache {cache}" in briefing.brief(deployment).lines()[0]


def test_the_nearest_pool_miss_is_first_by_its_cluster_slash_pool_text() -> None:
    """`Briefing` ranks pool misses by `cluster/pool` as `diagnose` does (`Reason.where`): by that
    text, not by cluster and then pool. By hand: "c-x/small" < "c/small" ('-' is 0x2D, '/' 0x2F)
    though cluster c sorts before c-x. The decode engine asks for 2 Ada GPUs per node and the l4
    class has 1: on both clusters the prefill engine fits and the decode one misses every pool, the
    l4 pools at the later stage (too few devices, past no matching device on the h100 pools)."""
    f = fleet(*(cluster(name, pool("gpu", cls="h100"), pool("small", cls="l4")) for name in ("c", "c-x")),
              classes=(klass("h100"), klass("l4", gpu(arch="Ada Lovelace", count=1))))
    pd = deployment("pd", standalone(request(HOPPER), name="prefill", phase="Prefill"),
                    standalone(request(ADA, count=2), name="decode", phase="Decode"), mode="PrefillDecode")
    placement, run = plan_with_run(f, workloads(pd))
    assert placement.deployments[pd.key].scheduled == 0
    c, cx = run.snapshot.clusters
    assert (c.name, cx.name) == ("c", "c-x")
    assert {name: where for name, (where, _) in c.first_pools.items()} == {"h100": "c/gpu", "l4": "c/small"}
    lines = Briefing(run).brief(pd).lines()
    assert lines == diagnose(run, pd, {}).brief().lines()
    assert lines[1].startswith("closest: c-x/small: "), lines


def test_clusters_with_the_same_labels_and_taints_are_refused_alike_and_the_first_by_name_is_nearest() -> None:
    """`Briefing._refused` asks the Clusters rule of one cluster per group of clusters with the same
    labels and taints; the count is the group's size and the nearest refusal the first by name. By
    hand: b and a carry region=eu, the deployment selects region=us."""
    f = fleet(*(cluster(name, pool("gpu", cls="h100"), labels={"region": "eu"}) for name in ("b", "a")))
    d = deployment("d", selector={"region": "us"})
    placement, run = plan_with_run(f, workloads(d))
    lines = Briefing(run).brief(d).lines()
    assert lines == (f"0/2 clusters can host another replica of {d.key}: 2 cluster(s) didn't match the "
                     "deployment's clusterSelector",
                     "closest: a: wants region=us, the cluster has region=eu; to fit: label the cluster "
                     "region=us or relax spec.clusterSelector")
    assert lines == diagnose(run, d, {}).brief().lines() == placement.deployments[d.key].reasons
