"""The real Pulumi engine runs the real program against two real API servers ("existing clusters").

One stack (file backend, passphrase secrets) in a scratch project, whose manifests
(tests/e2e/fleet) declare the clusters `east` and `west`, a Standalone engine with copies behind
a ModelService, a Leader + Worker gang with a ModelCache, a prefill/decode pair and the fleet
gateway on `east`. The kubeconfigs and the Hugging Face token are secret config. The stack turns
the serving stack off (`servingStack: false`: the charts cannot be downloaded here; the CRDs are
installed by the suite as a brownfield cluster would have them) and readiness waits off
(`skipAwait: true`: there are no kubelets). Gateways still wait for their address: a stand-in for
the Gateway controller (tests/e2e/gateways.py, test infrastructure, no product logic) writes a host
name into every Gateway's `status.addresses`, as Envoy Gateway does on a real cluster.

The tests are the scenario's steps, in order (each builds on the state the previous one left).
Every assertion reads the engine's JSON (`preview --json`, the event log of `up`, `stack output`,
`stack export`) or the API servers themselves, never our own logs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builders import UNPLACEABLE
from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from modelplane.local.project import HOME, PASSPHRASE, Project, PulumiFailed
from tests.e2e.reads import managed_left, objects, settled, versions
from modelplane.local.servers import Cluster, Fleet

FLEET = ROOT / "tests" / "e2e" / "fleet"
HF_TOKEN = "hf_e2e_secret_token_5f1c0e"
WORKLOAD_TYPES = {"kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"}
PLACEMENT_TYPE = "pulumi-python:dynamic/modelplane:Placement"


@dataclass
class Stack:
    project: Project
    fleet: Fleet
    manifests: dict[str, str]

    def cluster(self, name: str) -> Cluster:
        return self.fleet.clusters[name]

    def apply_manifests(self, **files: str | None) -> None:
        """Change manifest files (None removes one) and write the stack's folder anew."""
        merged = {**self.manifests, **files}
        self.manifests = {name: text for name, text in merged.items() if text is not None}
        self.project.write_manifests(self.manifests)


@pytest.fixture(scope="module")
def stack(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    project = Project.create(tmp_path_factory.mktemp("stack"), tools)
    manifests = {path.name: path.read_text() for path in sorted(FLEET.glob("*.yaml"))}
    project.deploy_to(fleet.clusters, manifests, HF_TOKEN)
    with gateway_addresses(fleet.clusters):
        yield Stack(project, fleet, manifests)


# --- reading the engine's JSON and the API servers ----------------------------------------------

def name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def type_of(urn: str) -> str:
    return urn.rsplit("::", 2)[-2].rsplit("$", 1)[-1]


def steps_by_op(preview: dict[str, Any]) -> dict[str, set[str]]:
    """Resource names by the step the engine plans for them (create, update, delete, same, ...)."""
    found: dict[str, set[str]] = {}
    for step in preview["steps"]:
        found.setdefault(step["op"], set()).add(name_of(step["urn"]))
    return found


def workloads_in(preview: dict[str, Any], op: str) -> set[str]:
    return {name_of(s["urn"]) for s in preview["steps"] if s["op"] == op and type_of(s["urn"]) in WORKLOAD_TYPES}


# --- the scenario ---------------------------------------------------------------------------------

CHAT_EAST, CHAT_WEST = "modelplane:east:Deployment:ml-team/chat-east-0-chat", "modelplane:west:Deployment:ml-team/chat-west-0-chat"
CLAIM_TEMPLATES = {"chat-east-0-chat-standalone", "coder-east-0-coder-leader", "coder-east-0-coder-worker"}
FIRST_WORKLOADS = {CHAT_EAST, CHAT_WEST, "modelplane:east:LeaderWorkerSet:ml-team/coder-east-0-coder",
                   "modelplane:east:Deployment:ml-team/pd-east-0-prefill",
                   "modelplane:east:Deployment:ml-team/pd-east-0-decode",
                   "modelplane:east:Deployment:ml-team/pd-east-0-epp"}


def test_1_preview_knows_the_placement_and_applies_nothing(stack: Stack) -> None:
    preview, _ = stack.project.preview()
    creates = workloads_in(preview, "create")
    assert creates == FIRST_WORKLOADS
    placement = [s for s in preview["steps"] if type_of(s["urn"]) == PLACEMENT_TYPE]
    assert [s["op"] for s in placement] == ["create"]
    known = json.loads(placement[0]["newState"]["inputs"]["placement"])  # the document as one JSON text
    assert {(r["deployment"], r["cluster"]) for r in known["replicas"]} == {
        ("ml-team/chat", "east"), ("ml-team/chat", "west"), ("ml-team/coder", "east"), ("ml-team/pd", "east")}
    for name in ("east", "west"):
        assert managed_left(stack.cluster(name)) == [], "a preview must not apply anything"


def test_2_up_creates_every_object_on_its_api_server(stack: Stack) -> None:
    stack.project.up()
    east, west = stack.cluster("east"), stack.cluster("west")
    deployments = objects(east, "Deployment")
    assert set(deployments) == {"chat-east-0-chat", "pd-east-0-prefill", "pd-east-0-decode", "pd-east-0-epp"}
    assert set(objects(west, "Deployment")) == {"chat-west-0-chat"}
    chat = deployments["chat-east-0-chat"]
    assert chat["spec"]["replicas"] == 2, "copies: 2"
    assert chat["spec"]["template"]["spec"]["nodeSelector"] == {"modelplane.ai/pool": "h100"}
    assert chat["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    lws = objects(east, "LeaderWorkerSet")["coder-east-0-coder"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert CLAIM_TEMPLATES <= set(objects(east, "ResourceClaimTemplate"))
    assert "coder-cache" in objects(east, "PersistentVolumeClaim")
    assert "coder-download" in objects(east, "Job")
    token = base64.b64decode(objects(east, "Secret")["hf-token"]["data"]["HF_TOKEN"]).decode()
    assert token == HF_TOKEN
    assert "pd-east-0" in objects(east, "InferencePool")
    backends = objects(east, "Backend")
    assert any(e.get("fqdn", {}).get("hostname") == "inference.modelplane-system.west.e2e.modelplane.test"
               for b in backends.values() for e in b["spec"]["endpoints"]), "the fleet routes reach west's gateway"
    outputs = stack.project.outputs()
    assert {key: value["scheduled"] for key, value in outputs["placement"].items()} == {
        "ml-team/chat": "2/2", "ml-team/coder": "1/1", "ml-team/pd": "1/1"}
    home = stack.project.directory / HOME
    assert sorted(home.rglob("*.log")) == [], "the CLI's automatic logs stay off (modelplane/local/project.py)"
    assert stack.project.run("logs", "list", check=False).returncode != 0, "no log directory to list"
    assert outputs["serviceUrls"] == {"ml-team/chat": "http://fleet.modelplane-system.east.e2e.modelplane.test/ml-team/chat/"}
    assert outputs["gatewayAddress"] == "fleet.modelplane-system.east.e2e.modelplane.test"
    assert outputs["gatewayAddresses"] == {
        "east": "inference.modelplane-system.east.e2e.modelplane.test",
        "west": "inference.modelplane-system.west.e2e.modelplane.test"}


def test_3_scaling_up_only_creates_the_new_replica(stack: Stack) -> None:
    before = {name: versions(stack.cluster(name)) for name in ("east", "west")}
    stack.apply_manifests(**{"models.yaml": stack.manifests["models.yaml"].replace(
        "name: chat\n  namespace: ml-team\nspec:\n  replicas: 2", "name: chat\n  namespace: ml-team\nspec:\n  replicas: 3")})
    preview, _ = stack.project.preview("--diff")
    ops = steps_by_op(preview)
    assert not ops.get("delete") and not ops.get("replace") and not ops.get("create-replacement")
    new = workloads_in(preview, "create")
    assert len(new) == 1 and next(iter(new)).startswith("modelplane:east:Deployment:ml-team/chat-east-1-"), new
    updated = {type_of(s["urn"]) for s in preview["steps"] if s["op"] == "update"}
    assert updated <= {PLACEMENT_TYPE, "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"}, updated
    stack.project.up()
    after = {name: versions(stack.cluster(name)) for name in ("east", "west")}
    for name in ("east", "west"):
        assert {k: v for k, v in after[name].items() if k in before[name]} == before[name], \
            "existing replicas are untouched"
    assert "Deployment/chat-east-1-chat" in after["east"]


def test_4_a_rerun_changes_nothing(stack: Stack) -> None:
    stack.project.run("preview", "--expect-no-changes")
    events = stack.project.up()
    ops = {e["resOutputsEvent"]["metadata"]["op"] for e in events if "resOutputsEvent" in e}
    assert ops <= {"same"}, ops


def test_5_draining_a_cluster_moves_its_replicas_create_before_delete(stack: Stack) -> None:
    drained = stack.manifests["fleet.yaml"].replace(
        "    modelplane.ai/region: us-west\nspec:\n", "    modelplane.ai/region: us-west\nspec:\n"
        "  taints:\n  - key: maintenance\n    effect: NoExecute\n")
    stack.apply_manifests(**{"fleet.yaml": drained})
    preview, _ = stack.project.preview()
    assert workloads_in(preview, "delete") == {CHAT_WEST}
    created = workloads_in(preview, "create")
    assert len(created) == 1 and next(iter(created)).startswith("modelplane:east:Deployment:ml-team/chat-east-"), created
    events = stack.project.up()
    order = [(e["resOutputsEvent"]["metadata"]["op"], name_of(e["resOutputsEvent"]["metadata"]["urn"]))
             for e in events if "resOutputsEvent" in e]
    assert order.index(("create", next(iter(created)))) < order.index(("delete", CHAT_WEST))
    assert settled(lambda: objects(stack.cluster("west"), "Deployment")) == {}
    # Then the cluster leaves the fleet: its serving objects go too, nothing else moves.
    stack.apply_manifests(**{"fleet.yaml": "\n---\n".join(
        doc for doc in drained.split("\n---\n") if "  name: west\n" not in doc)})
    preview, _ = stack.project.preview()
    assert not workloads_in(preview, "create") and not workloads_in(preview, "delete")
    deleted = steps_by_op(preview).get("delete", set())
    assert deleted and all(name == "modelplane:west" or name.startswith(("modelplane:west:", "modelplane:west-"))
                          for name in deleted), deleted
    stack.project.up()
    assert settled(lambda: managed_left(stack.cluster("west"))) == []




def test_6_a_deployment_that_cannot_fit_warns_or_fails_in_strict_mode(stack: Stack) -> None:
    stack.apply_manifests(**{"huge.yaml": UNPLACEABLE})
    preview, _ = stack.project.preview()
    warnings = [d["message"] for d in preview.get("diagnostics", []) if d.get("severity") == "warning"]
    assert any("ml-team/huge: 0/1 replicas scheduled" in w and "clusters can host another replica" in w
               for w in warnings), warnings
    stack.project.config("modelplane:strict", "true")
    with pytest.raises(PulumiFailed, match="strict mode: ml-team/huge is short"):
        stack.project.preview()
    stack.project.config("modelplane:strict", "false")
    stack.apply_manifests(**{"huge.yaml": None})


def test_7_refresh_finds_no_drift_secrets_stay_encrypted_and_destroy_cleans_up(stack: Stack) -> None:
    stack.project.run("refresh", "--yes", "--expect-no-changes")
    stack.project.run("preview", "--expect-no-changes")
    exported = stack.project.export()
    for secret in (HF_TOKEN, PASSPHRASE, *(c.token for c in stack.fleet.clusters.values())):
        assert secret not in exported
    stack.project.run("destroy", "--yes")
    for name in ("east", "west"):
        assert settled(lambda: managed_left(stack.cluster(name))) == []
