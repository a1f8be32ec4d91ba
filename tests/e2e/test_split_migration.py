"""Moving an existing single stack to the split layout on the real engine, without recreating anything.

The single stack `e2e` deploys the fleet of tests/e2e/fleet; then, as docs/pulumi.md ("Moving an
existing stack") says: a workload stack per cluster is created, `pulumi state move` carries each
cluster's serving stack and workloads over (their top-level URNs; the engine brings the children
and the provider along), `e2e` becomes the fleet stack, and from then on no stack plans a create,
delete or replacement of a Kubernetes object, and every object on the API servers keeps its uid.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from tests.e2e.project import STACK, Project
from tests.e2e.reads import objects
from tests.e2e.servers import Fleet

FLEET = ROOT / "tests" / "e2e" / "fleet"
CLUSTERS = ("east", "west")
KINDS = ("Deployment", "LeaderWorkerSet", "Service", "Secret", "HTTPRoute", "InferencePool", "Backend")
COMPONENT = "modelplane:index:Modelplane"


@pytest.fixture(scope="module")
def project(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    created = Project.create(tmp_path_factory.mktemp("migration"), tools)
    created.deploy_to(fleet.clusters, {p.name: p.read_text() for p in sorted(FLEET.glob("*.yaml"))}, "hf_migrate")
    with gateway_addresses(fleet.clusters):
        yield created


def uids(fleet: Fleet) -> dict[str, str]:
    return {f"{cluster}/{kind}/{name}": item["metadata"]["uid"] for cluster, server in fleet.clusters.items()
            for kind in KINDS for name, item in objects(server, kind).items()}


def moved_urns(state: dict[str, Any], cluster: str) -> list[str]:
    """The top-level resources of `cluster`'s workload stack: its ServingStack and the workloads the
    Modelplane component registers directly (the fleet gateway's objects stay in the fleet stack)."""
    found = []
    for resource in state["deployment"]["resources"]:
        urn = resource["urn"]
        chain, name = urn.split("::")[2], urn.rsplit("::", 1)[-1]
        parents = chain.split("$")[:-1]
        if parents == [COMPONENT] and name.startswith(f"{cluster}-") and (
                chain.endswith("$modelplane:index:ServingStack") or resource["type"].startswith("kubernetes:")):
            found.append(urn)
    return sorted(found)


def kube_steps(preview: dict[str, Any]) -> dict[str, str]:
    return {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in preview["steps"]
            if s["urn"].split("::")[2].rsplit("$", 1)[-1].startswith("kubernetes:")}


def test_a_single_stack_moves_to_the_split_layout_without_recreating_anything(project: Project, fleet: Fleet) -> None:
    project.up()
    before = uids(fleet)
    assert len(before) > 20
    state = json.loads(project.export())
    for cluster in CLUSTERS:
        project.run("stack", "init", cluster)
        for key, value in (("role", "cluster"), ("cluster", cluster), ("fleetStack", f"organization/modelplane/{STACK}")):
            project.run("config", "set", f"modelplane:{key}", value, "--stack", cluster)
        urns = moved_urns(state, cluster)
        assert any(urn.endswith(f"::{cluster}-serving") for urn in urns)
        project.run("state", "move", "--source", STACK, "--dest", cluster, "--yes", *urns)
    project.run("config", "set", "modelplane:role", "fleet", "--stack", STACK)
    for cluster in CLUSTERS:
        project.run("config", "set", "--path", f"modelplane:clusterStacks.{cluster}", f"organization/modelplane/{cluster}",
                    "--stack", STACK)
    for stack in (STACK, *CLUSTERS):
        preview, _ = project.preview("--stack", stack)
        changed = {name: op for name, op in kube_steps(preview).items() if op != "same"}
        assert changed == {}, (stack, changed)
        project.run("up", "--yes", "--skip-preview", "--stack", stack)
    assert uids(fleet) == before, "every object kept its uid"
    for stack in (STACK, *CLUSTERS):
        project.run("preview", "--expect-no-changes", "--stack", stack)
