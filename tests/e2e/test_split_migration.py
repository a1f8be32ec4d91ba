"""Moving an existing single stack to the split layout on the real engine, without recreating anything.

The single stack `e2e` deploys the fleet of tests/e2e/fleet; then, as docs/pulumi.md ("Moving an
existing stack") says: a cluster stack per cluster is created and `pulumi state move` carries each
cluster's resources over (the Modelplane component's children named `modelplane:<cluster>:...`: the
cluster's ServingStack, with its children, and its Kubernetes objects; the engine moves them to the
root of the new stack and takes the cluster's kubernetes provider along under the same name), `e2e`
becomes the fleet stack and runs first (it keeps the fleet gateway and its routes: its last
`gatewayAddresses` output holds every cluster's), then the cluster stacks, then the enrolment. No run
plans a create, delete, update or replacement of anything but one delete: the kubernetes provider
of west, which the fleet stack no longer deploys to (its gateway runs on east; deleting a provider
resource touches no cluster). Every object on the API servers keeps its uid, and nothing is left to
change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelplane.local.project import STACK, Project
from modelplane.local.servers import Fleet
from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import listed, objects

FLEET = ROOT / "tests" / "e2e" / "fleet"
CLUSTERS = ("east", "west")
KINDS = ("Deployment", "LeaderWorkerSet", "Service", "Secret", "HTTPRoute", "InferencePool", "Backend", "Job",
         "PersistentVolumeClaim", "ResourceClaimTemplate")
COMPONENT_URN = f"urn:pulumi:{STACK}::modelplane::modelplane:index:Modelplane::modelplane"


@pytest.fixture(scope="module")
def project(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    created = Project.create(tmp_path_factory.mktemp("migration"), tools)
    created.deploy_to(fleet.clusters, {p.name: p.read_text() for p in sorted(FLEET.glob("*.yaml"))}, "hf_migrate")
    with gateway_addresses(fleet.clusters):
        yield created


def uids(fleet: Fleet) -> dict[str, str]:
    found = {f"{cluster}/{kind}/{name}": item["metadata"]["uid"] for cluster, server in fleet.clusters.items()
             for kind in KINDS for name, item in objects(server, kind).items()}
    for cluster, server in fleet.clusters.items():
        for name, item in listed(server, "Namespace", None, "app.kubernetes.io/managed-by=modelplane").items():
            found[f"{cluster}/Namespace/{name}"] = item["metadata"]["uid"]
    return found


def moved_urns(state: dict[str, Any], cluster: str) -> list[str]:
    """What docs/pulumi.md moves to `cluster`'s stack: the Modelplane component's children named
    `modelplane:<cluster>:...` (its ServingStack and its Kubernetes objects; not the fleet gateway's
    objects, children of the InferenceGateway, nor the InferenceCluster `modelplane:<cluster>`)."""
    return sorted(r["urn"] for r in state["deployment"]["resources"]
                  if r.get("parent") == COMPONENT_URN and r["urn"].rsplit("::", 1)[-1].startswith(f"modelplane:{cluster}:"))


def planned(project: Project, stack: str) -> list[tuple[str, str, str]]:
    """(op, resource type, name) of each step a preview of `stack` plans, but the unchanged."""
    preview, _ = project.preview("--stack", stack)
    urns = [(step["op"], step["urn"].rsplit("::", 2)) for step in preview["steps"] if step["op"] != "same"]
    return sorted((op, types.rsplit("$", 1)[-1], name) for op, (_, types, name) in urns)


def changes(project: Project, stack: str) -> dict[str, int]:
    """The engine's change summary of a preview of `stack`, without the unchanged."""
    preview, _ = project.preview("--stack", stack)
    return {op: count for op, count in preview["changeSummary"].items() if op != "same"}


def test_a_single_stack_moves_to_the_split_layout_without_recreating_anything(project: Project, fleet: Fleet) -> None:
    project.up()
    before = uids(fleet)
    assert len(before) > 20
    state = json.loads(project.export())
    for cluster in CLUSTERS:
        project.run("stack", "init", cluster)
        for key, value in (("role", "cluster"), ("cluster", cluster), ("fleetStack", f"organization/modelplane/{STACK}")):
            project.run("config", "set", "--plaintext", f"modelplane:{key}", value, "--stack", cluster)
        urns = moved_urns(state, cluster)
        assert f"{COMPONENT_URN.rsplit('::', 1)[0]}$modelplane:index:ServingStack::modelplane:{cluster}:serving" in urns
        project.run("state", "move", "--source", STACK, "--dest", cluster, "--yes", *urns)
    project.run("config", "set", "--plaintext", "modelplane:role", "fleet", "--stack", STACK)
    # The fleet stack keeps the fleet gateway and its routes; it deploys to east (the gateway's host) only, so the
    # kubernetes provider of west is not needed there any more (`ClusterComponent.provider`).
    assert planned(project, STACK) == [("delete", "pulumi:providers:kubernetes", "modelplane:west-existing-k8s")]
    project.run("up", "--yes", "--skip-preview", "--stack", STACK)
    for cluster in CLUSTERS:
        assert changes(project, cluster) == {}, cluster
        project.run("up", "--yes", "--skip-preview", "--stack", cluster)
        project.run("config", "set", "--plaintext", "--path", f"modelplane:clusterStacks.{cluster}",
                    f"organization/modelplane/{cluster}", "--stack", STACK)
    assert changes(project, STACK) == {}
    project.run("up", "--yes", "--skip-preview", "--stack", STACK)
    assert uids(fleet) == before, "every object kept its uid"
    moved = {cluster: {r["urn"].rsplit("::", 1)[-1] for r in json.loads(project.run(
        "stack", "export", "--stack", cluster).stdout)["deployment"]["resources"]} for cluster in CLUSTERS}
    assert "modelplane:east:Deployment:ml-team/chat-east-0-chat" in moved["east"]
    assert "modelplane:east-existing-k8s" in moved["east"], "the provider came along under its name"
    for stack in (STACK, *CLUSTERS):
        project.run("preview", "--expect-no-changes", "--stack", stack)
