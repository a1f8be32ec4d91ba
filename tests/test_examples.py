"""Every example set loads, validates and places as its README (and the seed it comes from) says."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.scheduling import place

EXAMPLES = Path(__file__).parent.parent / "examples"
PROGRAMS = sorted(p.name for p in EXAMPLES.iterdir() if (p / "Pulumi.yaml").is_file())
"""Examples that are Pulumi programs of their own (tested by their own tests), not manifest sets."""
SETS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and any(p.glob("*.yaml")) and p.name not in PROGRAMS)
STAGED = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and not any(p.glob("*.yaml")) and any(p.glob("*/*.yaml")))
"""Examples whose manifests are stages in sub-folders, planned stage by stage by a test of their own."""


def where(example: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """deployment -> [(cluster, {engine: pool or leader-pool+worker-pool})] for one example set."""
    manifests = load([EXAMPLES / example])
    placement = place(manifests.fleet, manifests.workloads)
    out: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for replica in placement.replicas:
        engines = {name: "+".join(dict.fromkeys(m.pool for m in members.values()))
                   for name, members in replica.engines.items()}
        out.setdefault(replica.deployment, []).append((replica.cluster, engines))
    assert all(not status.short for status in placement.deployments.values()), placement.deployments
    return out


def test_every_staged_example_has_its_own_stage_by_stage_test() -> None:
    assert STAGED == ["getting-started"]  # tests/test_getting_started.py
    assert (Path(__file__).parent / "test_getting_started.py").is_file()


def test_every_set_is_covered() -> None:
    assert SETS == ["always-on", "amd-mi300x", "kimi-k2", "local", "more-clouds", "multi-cloud", "prefill-decode",
                    "qwen-demo", "qwen3-8b", "qwen3-coder"]


@pytest.mark.parametrize("example", SETS)
def test_example_loads_without_problems(example: str) -> None:
    manifests = load([EXAMPLES / example])
    assert manifests.warnings == ()
    assert (EXAMPLES / example / "README.md").is_file()


def test_always_on_spreads_qwen3_8b_across_its_two_clusters_once_scaled() -> None:
    """docs/always-on.md: one replica on the GKE L4 pool; `kubectl scale --replicas 2` adds the on-prem one."""
    assert where("always-on") == {"ml-team/qwen3-8b": [("gke-us-central", {"qwen3-8b": "l4"})]}


def test_amd_mi300x_places_one_replica_on_each_mi300x_pool_and_none_on_the_h100s() -> None:
    assert where("amd-mi300x") == {"ml-team/llama-70b": [("amd-east", {"llama": "mi300x"}),
                                                          ("mixed-west", {"llama": "mi300x"})]}


def test_qwen3_8b_lands_on_the_l4_pool() -> None:
    """Seed 001: Qwen3-8B asks for >= 20Gi; an L4 publishes 23034Mi."""
    assert where("qwen3-8b") == {"ml-team/qwen3-8b": [("starter", {"qwen3-8b": "l4"})]}


def test_qwen3_coder_gang_takes_two_h200_nodes() -> None:
    """Seed 001: a Leader + 1 Worker, 8 GPUs of >= 120Gi per node: two nodes of the H200 pool."""
    manifests = load([EXAMPLES / "qwen3-coder"])
    replica = place(manifests.fleet, manifests.workloads).replicas[0]
    members = replica.engines["qwen3-coder"]
    assert {str(role): (m.pool, m.nodes, m.requests[0].count) for role, m in members.items()} == {
        "Leader": ("h200", 1, 8), "Worker": ("h200", 1, 8)}


def test_kimi_k2_needs_the_infiniband_pool_and_skips_the_80gi_one() -> None:
    """Seed 003: 2 nodes x 8 H200 on InfiniBand; the H100 (81559Mi, no fabric) pool is skipped."""
    assert where("kimi-k2") == {"ml-team-research/kimi-k2-instruct": [("prod-coreweave-us-east", {"kimi-k2": "frontier"})]}


def test_prefill_and_decode_use_two_classes_of_one_cluster() -> None:
    assert where("prefill-decode") == {"ml-team/llama-70b-pd": [("gke-us-east", {"prefill": "h100", "decode": "h200"})]}


def test_the_multi_cloud_demo_runs_everything() -> None:
    assert where("multi-cloud") == {
        "ml-team/kimi-k2-instruct": [("onprem-us-east", {"kimi-k2": "frontier"})],
        "ml-team/llama-70b-pd": [("eks-us-west", {"prefill": "h100", "decode": "a100"})],
        "ml-team/qwen-demo": [("gke-us-central", {"qwen": "l4"})],
        # Both EKS pools have 8 GPUs per node; the H100's 81559Mi is less memory than the A100's 81920Mi.
        "ml-team/qwen3-8b": [("eks-us-west", {"qwen3-8b": "h100"}), ("gke-us-central", {"qwen3-8b": "l4"})],
        "ml-team/qwen3-coder": [("onprem-us-east", {"qwen3-coder": "frontier"})],
    }


def test_more_clouds_places_on_aks_nebius_vultr_the_capacity_block_and_the_existing_cluster() -> None:
    """Issue 15: the Capacity Block's two nodes count like any pool's; the gang fills them."""
    assert where("more-clouds") == {
        "ml-team/kimi-k2-instruct": [("eks-us-east", {"kimi-k2": "gpu-h200"})],
        "ml-team/llama-3-3-70b": [("aks-westeurope", {"llama": "gpuh100"}), ("byo-us-east", {"llama": "gpu-h100"}),
                                  ("nebius-eu-north", {"llama": "gpu-h100"})],
        "ml-team/qwen3-8b": [("vultr-ewr", {"qwen3-8b": "gpu-l40s"})],
    }
