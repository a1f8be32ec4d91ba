"""EKS under `pulumi.runtime.set_mocks`: a principal the manifest names (the CI role that runs
`pulumi preview`) gets an access entry and its policy, cluster-wide (a bad ARN is a manifest error
with its field path); each GPU node group runs the nodes the placement holds on its pool."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import ManifestErrors, load_sources
from modelplane.pulumi.clusters.eks import desired_size
from tests.pulumi.harness import unwrap
from tests.pulumi.test_clouds import EXAMPLE, CloudEngine, build_fleet

CI_ROLE = "arn:aws:iam::123456789012:role/github-preview"
ENTRIES = f"""      region: us-east-2
      accessEntries:
      - principalArn: {CI_ROLE}
        policy: AmazonEKSClusterAdminPolicy
"""


def fleet_text(entries: str) -> list[tuple[str, str]]:
    sources = [(str(path), path.read_text()) for path in sorted(EXAMPLE.glob("*.yaml"))]
    return [(name, text.replace("      region: us-east-2\n", entries)) for name, text in sources]


@pytest.fixture(scope="module")
def engine() -> CloudEngine:
    engine = CloudEngine()
    build_fleet(engine, load_sources(fleet_text(ENTRIES)))
    return engine


@pytest.mark.parametrize(("name", "want"), [
    ("ml:eks-us-east-eks-access-0", {"clusterName": "eks-us-east", "principalArn": CI_ROLE}),
    ("ml:eks-us-east-eks-access-0-policy", {
        "clusterName": "eks-us-east", "principalArn": CI_ROLE, "accessScope": {"type": "cluster"},
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"}),
])
def test_a_named_principal_gets_an_access_entry_and_its_policy(engine: CloudEngine, name: str,
                                                                want: dict[str, Any]) -> None:
    inputs = unwrap(engine.named(name).inputs)
    assert {key: inputs.get(key) for key in want} == want


def test_without_entries_no_access_entry_is_registered() -> None:
    engine = CloudEngine()
    build_fleet(engine)
    assert [r.name for r in engine.registered if r.typ.startswith("aws:eks/access")] == []


@pytest.mark.parametrize(("entry", "field"), [
    ("      - principalArn: github-preview\n        policy: AmazonEKSViewPolicy\n", "principalArn"),
    (f"      - principalArn: {CI_ROLE}\n        policy: Owner\n", "policy"),
])
def test_a_bad_entry_is_a_manifest_error_at_its_field(entry: str, field: str) -> None:
    with pytest.raises(ManifestErrors) as errors:
        load_sources(fleet_text(f"      region: us-east-2\n      accessEntries:\n{entry}"))
    assert [str(e).split(": ")[2] for e in errors.value.errors] == [f"spec.cluster.eks.accessEntries[0].{field}"]


@pytest.mark.parametrize(("floor", "ceiling", "held", "want"), [
    (0, 2, 0, 0),    # nothing placed: the group runs no node
    (0, 2, 1, 1),    # one node held: exactly one node
    (1, 4, 0, 1),    # the floor stays
    (0, 2, 3, 2),    # never past the ceiling (the ledger never holds more, but the clamp says so)
])
def test_a_node_group_runs_the_nodes_the_placement_holds(floor: int, ceiling: int, held: int, want: int) -> None:
    pool = {"name": "gpu", "node_count": floor, "min_node_count": floor, "max_node_count": ceiling}
    assert desired_size(pool, held) == want  # type: ignore[arg-type]


def test_the_capacity_block_group_is_sized_from_the_placement(engine: CloudEngine) -> None:
    """examples/more-clouds: the gpu-h200 pool (nodeCount 2) holds the Kimi K2 gang's two nodes."""
    assert unwrap(engine.named("ml:eks-us-east-eks:gpu-h200").inputs)["scalingConfig"]["desiredSize"] == 2
