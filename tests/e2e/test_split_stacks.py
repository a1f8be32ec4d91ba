"""The split layout on the real engine: a fleet stack and one cluster stack per cluster, run in parallel.

One scratch project, one `file://` backend, three stacks of the same program: `e2e` (`modelplane:role:
fleet`, the manifests of tests/e2e/fleet, both kubeconfigs, the Hugging Face token) and `east`, `west`
(`modelplane:role: cluster`, reading `organization/modelplane/e2e`'s outputs). The cluster stacks run
in parallel with the CLI, at most PARALLEL at a time (no kubelet runs a PKO workspace here).
The steps, in order: the first fleet run (no cluster stack exists yet), both cluster stacks, the
fleet run that enrolls them (routes to their gateways), nothing left to change anywhere; the fleet
stack's state rewritten to the previous version's layout (one `workloadStacks` output, every object in
the Placement's inputs): a cluster stack refuses it and deletes nothing, one fleet run upgrades it
(an update of the Placement resource's state, nothing else); a replica
moves from west to east make-before-break across stacks; then west leaves the fleet: its stack is
destroyed, the cluster itself is left alone. Every assertion reads the engine's JSON (`stack output`,
`stack export`, `preview --json`) or the API servers.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import dump_objects, load
from modelplane.local.project import STACK, Project, PulumiFailed
from modelplane.local.servers import Fleet
from modelplane.pulumi.roles import LEGACY, SECRETS, SHARE
from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import listed, objects, settled

FLEET = ROOT / "tests" / "e2e" / "fleet"
HF_TOKEN = "hf_e2e_split_token_93b1"
CLUSTERS = ("east", "west")
PARALLEL = 2
FLEET_STACK = f"organization/modelplane/{STACK}"
WEST_TAINTED = ("    modelplane.ai/region: us-west\nspec:\n",
                "    modelplane.ai/region: us-west\nspec:\n  taints:\n  - key: maintenance\n    effect: NoExecute\n")


@dataclass
class Split:
    project: Project
    fleet: Fleet
    manifests: dict[str, str]

    def run(self, stack: str, *args: str, check: bool = True) -> str:
        return self.project.run(*args, "--stack", stack, check=check).stdout

    def config(self, stack: str, key: str, value: str, path: bool = False) -> None:
        self.run(stack, "config", "set", "--plaintext", *(["--path"] if path else []), key, value)

    def up(self, *stacks: str) -> None:
        """`pulumi up` of `stacks`, at most PARALLEL at a time."""
        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(lambda stack: self.run(stack, "up", "--yes", "--skip-preview"), stacks))

    def outputs(self, stack: str) -> dict[str, Any]:
        return json.loads(self.run(stack, "stack", "output", "--json"))

    def no_changes(self, *stacks: str) -> None:
        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(lambda stack: self.run(stack, "preview", "--expect-no-changes"), stacks))

    def resources(self, stack: str) -> list[dict[str, Any]]:
        return json.loads(self.run(stack, "stack", "export"))["deployment"].get("resources") or []

    def shares(self) -> dict[str, dict[str, Any]]:
        """Cluster -> the fleet stack's `workloadStack-<cluster>` output."""
        return {key.removeprefix(SHARE): value for key, value in self.outputs(STACK).items() if key.startswith(SHARE)}


@pytest.fixture(scope="module")
def split(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    project = Project.create(tmp_path_factory.mktemp("split"), tools)
    manifests = {path.name: path.read_text() for path in sorted(FLEET.glob("*.yaml"))}
    project.deploy_to(fleet.clusters, manifests, HF_TOKEN)
    project.config("modelplane:role", "fleet")
    made = Split(project, fleet, manifests)
    for cluster in CLUSTERS:
        project.run("stack", "init", cluster)
        for key, value in (("role", "cluster"), ("cluster", cluster), ("fleetStack", FLEET_STACK)):
            made.config(cluster, f"modelplane:{key}", value)
    with gateway_addresses(fleet.clusters):
        yield made


def deployments(split: Split, cluster: str) -> set[str]:
    return set(objects(split.fleet.clusters[cluster], "Deployment"))


def address(cluster: str) -> str:
    return f"inference.modelplane-system.{cluster}.e2e.modelplane.test"


EAST = {"chat-east-0-chat", "pd-east-0-prefill", "pd-east-0-decode", "pd-east-0-epp"}


def test_1_the_fleet_stack_exports_each_clusters_share_and_deploys_no_workload(split: Split) -> None:
    split.up(STACK)
    outputs = split.outputs(STACK)
    assert {cluster: sorted((r["deployment"], r["index"]) for r in json.loads(entry["replicas"]))
            for cluster, entry in split.shares().items()} == {
        "east": [("ml-team/chat", 0), ("ml-team/coder", 0), ("ml-team/pd", 0)], "west": [("ml-team/chat", 0)]}
    assert {cluster: sorted(o["metadata"]["name"] for o in json.loads(entry["objects"]) if o["kind"] == "ModelDeployment")
            for cluster, entry in split.shares().items()} == {"east": ["chat", "coder", "pd"], "west": ["chat", "coder"]}, \
        "west: chat runs there; coder's ModelCache has no clusterSelector and coder admits west, so it is staged there"
    assert all(outputs[SECRETS + cluster] == "[secret]" for cluster in CLUSTERS)
    for cluster in CLUSTERS:
        assert deployments(split, cluster) == set(), "workloads are the cluster stacks'"
    kinds = {r["type"] for r in split.resources(STACK)}
    assert not {k for k in kinds if k.startswith("kubernetes:apps/")}, kinds


def test_2_the_cluster_stacks_run_in_parallel_and_deploy_their_share(split: Split) -> None:
    split.up(*CLUSTERS)
    assert deployments(split, "east") == EAST
    assert deployments(split, "west") == {"chat-west-0-chat"}
    east = split.fleet.clusters["east"]
    assert base64.b64decode(objects(east, "Secret")["hf-token"]["data"]["HF_TOKEN"]).decode() == HF_TOKEN
    assert "coder-east-0-coder" in objects(east, "LeaderWorkerSet")
    for cluster in CLUSTERS:
        outputs = split.outputs(cluster)
        assert {r["cluster"] for r in json.loads(outputs["applied"])} == {cluster}
        assert outputs["gatewayAddress"] == address(cluster)
        names = {r["urn"].rsplit("::", 1)[-1] for r in split.resources(cluster)}
        other = next(c for c in CLUSTERS if c != cluster)
        assert f"modelplane:{cluster}:Deployment:ml-team/chat-{cluster}-0-chat" in names
        assert not any(name.startswith(f"modelplane:{other}") for name in names), "only its own cluster"
    exported = split.run("east", "stack", "export")
    assert HF_TOKEN not in exported and split.fleet.clusters["east"].token not in exported


def test_3_enrolled_cluster_stacks_get_fleet_routes_and_nothing_is_left_to_change(split: Split) -> None:
    assert not any("fqdn" in e for b in objects(split.fleet.clusters["east"], "Backend").values()
                   for e in b["spec"]["endpoints"]), "no route before a cluster stack reports its address"
    for cluster in CLUSTERS:
        split.config(STACK, f"modelplane:clusterStacks.{cluster}", f"organization/modelplane/{cluster}", path=True)
    split.up(STACK)
    backends = objects(split.fleet.clusters["east"], "Backend")
    assert any(e.get("fqdn", {}).get("hostname") == address("west")
               for b in backends.values() for e in b["spec"]["endpoints"]), "the fleet routes reach west's gateway"
    assert split.outputs(STACK)["gatewayAddresses"] == {cluster: address(cluster) for cluster in CLUSTERS}
    split.no_changes(STACK, *CLUSTERS)


def earlier_layout(state: dict[str, Any], objects: list[dict[str, Any]]) -> dict[str, Any]:
    """`state` (a `stack export` of the fleet stack) as the previous version wrote it: every cluster's share
    in one `workloadStacks` output, the Placement resource's inputs holding every object, and its
    placement document as data rather than text."""
    earlier = copy.deepcopy(state)
    for resource in earlier["deployment"]["resources"]:
        if resource["type"] == "pulumi:pulumi:Stack":
            outputs = resource["outputs"]
            shares = {key.removeprefix(SHARE): outputs.pop(key) for key in list(outputs) if key.startswith(SHARE)}
            for key in [key for key in outputs if key.startswith(SECRETS)]:
                del outputs[key]
            outputs[LEGACY] = {"objects": objects, "clusters": {cluster: {key: value for key, value in share.items()
                                                                          if key != "objects"}
                                                                for cluster, share in shares.items()}}
        if resource["type"].endswith("modelplane:Placement"):
            del resource["inputs"]["objectsDigest"]
            resource["inputs"]["objects"] = objects
            for part in ("inputs", "outputs"):
                resource[part]["placement"] = json.loads(resource[part]["placement"])
    return earlier


def test_3b_a_fleet_stack_of_the_earlier_output_layout_upgrades_and_nothing_is_deleted(split: Split) -> None:
    exported = json.loads(split.run(STACK, "stack", "export"))
    objects = dump_objects(load([FLEET]))
    earlier = split.project.directory / "earlier-fleet-state.json"
    earlier.write_text(json.dumps(earlier_layout(exported, objects)))
    split.run(STACK, "stack", "import", "--file", str(earlier))
    before = {(r["urn"], r.get("id")) for r in split.resources("east")}
    with pytest.raises(PulumiFailed, match=r"layout of an earlier modelplane version"):
        split.up("east")
    assert {(r["urn"], r.get("id")) for r in split.resources("east")} == before, "a failed read deletes nothing"
    preview, _ = split.project.preview("--stack", STACK)
    changed = [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in preview["steps"] if s["op"] not in ("same", "read")]
    assert changed == [("update", "modelplane-placement")], "the Placement's state alone, to the new form"
    split.up(STACK)
    placement = next(r for r in split.resources(STACK) if r["type"].endswith("modelplane:Placement"))
    assert "objects" not in placement["inputs"] and len(placement["inputs"]["objectsDigest"]) == 64
    assert LEGACY not in split.outputs(STACK) and sorted(split.shares()) == list(CLUSTERS)
    split.no_changes(STACK, *CLUSTERS)


def test_4_a_move_across_stacks_is_make_before_break(split: Split) -> None:
    drained = split.manifests["fleet.yaml"].replace(*WEST_TAINTED)
    assert drained != split.manifests["fleet.yaml"]
    split.manifests["fleet.yaml"] = drained
    split.project.write_manifests(split.manifests)
    split.up(STACK)
    clusters = split.shares()
    assert clusters["west"]["draining"] == ["ml-team/chat#0"]
    moved = sorted(f"chat-east-{r['index']}-chat" for r in json.loads(clusters["east"]["replicas"])
                   if r["deployment"] == "ml-team/chat")
    assert len(moved) == 2
    split.up("west")
    assert deployments(split, "west") == {"chat-west-0-chat"}, "west keeps its replica until east runs the new one"
    split.up(STACK)
    assert split.shares()["west"]["draining"] == ["ml-team/chat#0"]
    split.up("east")
    assert set(moved) <= deployments(split, "east")
    split.up(STACK)
    west = split.shares()["west"]
    assert (west["installPrerequisites"], json.loads(west["replicas"]), west["draining"]) == (False, [], [])
    split.up("west")
    assert settled(lambda: objects(split.fleet.clusters["west"], "Deployment")) == {}
    split.no_changes(STACK, *CLUSTERS)


def test_5_a_removed_cluster_s_stack_is_destroyed_never_the_cluster(split: Split) -> None:
    gone = "\n---\n".join(doc for doc in split.manifests["fleet.yaml"].split("\n---\n") if "  name: west\n" not in doc)
    split.project.write_manifests({**split.manifests, "fleet.yaml": gone})
    split.up(STACK)
    assert "west" not in split.shares() and SECRETS + "west" not in split.outputs(STACK)
    before = {(r["urn"], r.get("id")) for r in split.resources("west")}
    with pytest.raises(PulumiFailed, match="exports nothing for cluster 'west'"):
        split.up("west")
    assert {(r["urn"], r.get("id")) for r in split.resources("west")} == before, \
        "a cluster stack the fleet no longer exports deletes nothing"
    split.run("west", "destroy", "--yes")
    assert split.resources("west") == []
    west = split.fleet.clusters["west"]
    assert west.ready(), "destroying the cluster stack leaves the cluster itself alone"
    assert "kube-system" in listed(west, "Namespace", None)
    split.no_changes(STACK, "east")
