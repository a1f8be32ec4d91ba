"""The split layout on the real engine: a fleet stack and one workload stack per cluster, run in parallel.

One scratch project, one `file://` backend, three stacks of the same program: `e2e` (`modelplane:role:
fleet`, the manifests of tests/e2e/fleet, both kubeconfigs, the Hugging Face token) and `east`, `west`
(`modelplane:role: cluster`, reading `organization/modelplane/e2e` through a StackReference). The
workload stacks run in parallel with the CLI, two at a time (no kubelet runs a PKO workspace here).
The steps, in order: the first fleet run (no workload stack exists yet), both workload stacks, the
fleet run that enrolls them (routes to their gateways), nothing left to change anywhere; then a
replica moves from west to east make-before-break across stacks. Every assertion reads the engine's
JSON (`stack output`, `preview --json`) or the API servers.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from tests.e2e.project import STACK, Project
from tests.e2e.reads import objects, settled
from tests.e2e.servers import Fleet

FLEET = ROOT / "tests" / "e2e" / "fleet"
HF_TOKEN = "hf_e2e_split_token_93b1"
CLUSTERS = ("east", "west")
PARALLEL = 2
FLEET_STACK = f"organization/modelplane/{STACK}"


@dataclass
class Split:
    project: Project
    fleet: Fleet
    manifests: dict[str, str]

    def run(self, stack: str, *args: str) -> str:
        return self.project.run(*args, "--stack", stack).stdout

    def up(self, *stacks: str) -> None:
        """`pulumi up` of `stacks`, at most PARALLEL at a time."""
        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(lambda stack: self.run(stack, "up", "--yes", "--skip-preview"), stacks))

    def outputs(self, stack: str) -> dict[str, Any]:
        return json.loads(self.run(stack, "stack", "output", "--json"))

    def no_changes(self, *stacks: str) -> None:
        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(lambda stack: self.run(stack, "preview", "--expect-no-changes"), stacks))


@pytest.fixture(scope="module")
def split(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    project = Project.create(tmp_path_factory.mktemp("split"), tools)
    manifests = {path.name: path.read_text() for path in sorted(FLEET.glob("*.yaml"))}
    project.deploy_to(fleet.clusters, manifests, HF_TOKEN)
    project.config("modelplane:role", "fleet")
    for cluster in CLUSTERS:
        project.run("stack", "init", cluster)
        for key, value in (("role", "cluster"), ("cluster", cluster), ("fleetStack", FLEET_STACK)):
            project.run("config", "set", f"modelplane:{key}", value, "--stack", cluster)
    with gateway_addresses(fleet.clusters):
        yield Split(project, fleet, manifests)


def deployments(split: Split, cluster: str) -> set[str]:
    return set(objects(split.fleet.clusters[cluster], "Deployment"))


EAST = {"chat-east-0-chat", "pd-east-0-prefill", "pd-east-0-decode", "pd-east-0-epp"}


def test_1_the_fleet_stack_exports_each_clusters_share_and_deploys_no_workload(split: Split) -> None:
    split.up(STACK)
    shared = split.outputs(STACK)["workloadStacks"]
    assert {cluster: sorted((r["deployment"], r["index"]) for r in entry["replicas"])
            for cluster, entry in shared["clusters"].items()} == {
        "east": [("ml-team/chat", 0), ("ml-team/coder", 0), ("ml-team/pd", 0)], "west": [("ml-team/chat", 0)]}
    assert split.outputs(STACK)["workloadSecrets"] == "[secret]"
    for cluster in CLUSTERS:
        assert deployments(split, cluster) == set(), "workloads are the workload stacks'"


def test_2_the_workload_stacks_run_in_parallel_and_deploy_their_share(split: Split) -> None:
    split.up(*CLUSTERS)
    assert deployments(split, "east") == EAST
    assert deployments(split, "west") == {"chat-west-0-chat"}
    east = split.fleet.clusters["east"]
    assert base64.b64decode(objects(east, "Secret")["hf-token"]["data"]["HF_TOKEN"]).decode() == HF_TOKEN
    assert "coder-east-0-coder" in objects(east, "LeaderWorkerSet")
    for cluster in CLUSTERS:
        applied = split.outputs(cluster)["applied"]
        assert {r["cluster"] for r in applied} == {cluster}
        assert split.outputs(cluster)["gatewayAddress"] == f"inference.modelplane-system.{cluster}.e2e.modelplane.test"


def test_3_enrolled_workload_stacks_get_fleet_routes_and_nothing_is_left_to_change(split: Split) -> None:
    assert not any("fqdn" in e for b in objects(split.fleet.clusters["east"], "Backend").values()
                   for e in b["spec"]["endpoints"]), "no route before a workload stack reports its address"
    for cluster in CLUSTERS:
        split.run(STACK, "config", "set", "--path", f"modelplane:clusterStacks.{cluster}",
                  f"organization/modelplane/{cluster}")
    split.up(STACK)
    backends = objects(split.fleet.clusters["east"], "Backend")
    assert any(e.get("fqdn", {}).get("hostname") == "inference.modelplane-system.west.e2e.modelplane.test"
               for b in backends.values() for e in b["spec"]["endpoints"]), "the fleet routes reach west's gateway"
    assert split.outputs(STACK)["gatewayAddresses"] == {
        cluster: f"inference.modelplane-system.{cluster}.e2e.modelplane.test" for cluster in CLUSTERS}
    split.no_changes(STACK, *CLUSTERS)


def test_4_a_move_across_stacks_is_make_before_break(split: Split) -> None:
    drained = split.manifests["fleet.yaml"].replace(
        "    modelplane.ai/region: us-west\nspec:\n", "    modelplane.ai/region: us-west\nspec:\n"
        "  taints:\n  - key: maintenance\n    effect: NoExecute\n")
    split.project.write_manifests({**split.manifests, "fleet.yaml": drained})
    split.up(STACK)
    clusters = split.outputs(STACK)["workloadStacks"]["clusters"]
    assert clusters["west"]["draining"] == ["ml-team/chat#0"]
    moved = sorted(f"chat-east-{r['index']}-chat" for r in clusters["east"]["replicas"] if r["deployment"] == "ml-team/chat")
    assert len(moved) == 2
    split.up("west")
    assert deployments(split, "west") == {"chat-west-0-chat"}, "west keeps its replica until east runs the new one"
    split.up(STACK)
    assert split.outputs(STACK)["workloadStacks"]["clusters"]["west"]["draining"] == ["ml-team/chat#0"]
    split.up("east")
    assert set(moved) <= deployments(split, "east")
    split.up(STACK)
    assert split.outputs(STACK)["workloadStacks"]["clusters"]["west"] == {
        "installPrerequisites": False, "replicas": [], "draining": []}
    split.up("west")
    assert settled(lambda: objects(split.fleet.clusters["west"], "Deployment")) == {}
    split.no_changes(STACK, *CLUSTERS)
