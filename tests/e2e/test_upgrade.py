"""Upgrading on the real engine: a stack brought up by the code of b30faba (before issue 22 renamed every
logical name), then previewed and updated by today's code, replaces and deletes nothing but what was renamed by design.

The b30faba program and package come from tests/data/upgrade/b30faba.tar.gz (`git archive` of that
commit, kept as data so no clone history is needed); the stack is tests/e2e/fleet as b30faba had it (two existing clusters,
`east` and `west`: every kind of workload), with b30faba's `__main__.py` and PYTHONPATH on its tree.
Then the project gets today's `__main__.py` and PYTHONPATH, and:
- `preview` stops before any step: b30faba's clusters leave their gateways open without saying so,
  which today's loader refuses (issue 23); the user's edit, `spec.gateway.publicInference: true` on
  each cluster (the fleet is plain HTTP), lets the upgrade go on and renders nothing else;
- `preview --json` plans no delete, and no create but the NetworkPolicies issue 23 added (`ADDED`):
  every old URN is taken over through its alias; the only replaces are the two ModelCache download Jobs (`REPLACED`), whose pod template, immutable in a
  Job, issue 23's hardening changed (no ServiceAccount token, restricted security context, the token
  read from a mounted file): the engine deletes and re-creates each, so the download runs once more;
- the engine's Service beside the gang's LeaderWorkerSet is renamed by design (`RENAMED`: the
  LeaderWorkerSet controller owns a headless Service named as the set): created under its new name,
  the old one deleted;
- `up` does exactly that, and every other Deployment, LeaderWorkerSet, Service and HTTPRoute on either
  API server keeps its uid (nothing re-created; an update of what today's code renders differently is
  allowed);
- a second preview plans no change at all.
Assertions read the engine's JSON and the API servers.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from modelplane.local.project import Project, events
from modelplane.local.servers import Fleet
from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import objects

BASE = "b30faba"
ARCHIVES = ROOT / "tests" / "data" / "upgrade"
HF_TOKEN = "hf_e2e_upgrade_token_0b4e"
CHANGES = ("create", "delete", "replace", "create-replacement", "delete-replaced", "discard")
WORKLOADS = ("Deployment", "LeaderWorkerSet", "Service", "HTTPRoute")
REPLACED = {"modelplane:east:Job:ml-team/coder-download", "modelplane:west:Job:ml-team/coder-download"}
ADDED = {"modelplane:east:NetworkPolicy:ml-team/modelplane-engines",
         "modelplane:west:NetworkPolicy:ml-team/modelplane-engines"}
"""New since b30faba by design, not renamed: issue 23's NetworkPolicy per model namespace."""
RENAMED = {"modelplane:east:Service:ml-team/coder-east-0-coder-http": "east-service-ml-team-coder-east-0-coder"}
"""Today's name -> b30faba's URN name: the Service beside the LeaderWorkerSet `coder-east-0-coder`, which
its controller would make, headless, under the set's name (`ReplicaContext.service_name`)."""
OPENED = re.compile(r"(kind: InferenceCluster\n(?:.*\n)*?spec:\n)")
"""Each cluster's spec, where the user's upgrade edit opens its gateway on purpose (plain-HTTP fleet)."""


@dataclass
class Upgrade:
    project: Project
    fleet: Fleet
    base: Path


def checkout(commit: str, into: Path) -> Path:
    """The tree of `commit`, from its archive in tests/data/upgrade."""
    with tarfile.open(ARCHIVES / f"{commit}.tar.gz") as tar:
        tar.extractall(into, filter="data")
    return into


@pytest.fixture(scope="module")
def upgrade(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgrade]:
    base = checkout(BASE, tmp_path_factory.mktemp("base"))
    project = Project.create(tmp_path_factory.mktemp("upgrade-stack"), tools)
    manifests = {path.name: path.read_text() for path in sorted((base / "tests" / "e2e" / "fleet").glob("*.yaml"))}
    project.deploy_to(fleet.clusters, manifests, HF_TOKEN)
    with gateway_addresses(fleet.clusters):
        yield Upgrade(project, fleet, base)


def run_with(monkeypatch: pytest.MonkeyPatch, project: Project, tree: Path, *args: str,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """A pulumi command running the program and package of `tree`."""
    (project.directory / "__main__.py").write_text((tree / "__main__.py").read_text())
    with monkeypatch.context() as patched:
        patched.setenv("PYTHONPATH", str(tree))
        return project.run(*args, check=check)


def workload_identity(upgrade: Upgrade) -> dict[str, str]:
    """The uid of every workload object on both API servers."""
    return {f"{name}/{kind}/{obj}": item["metadata"]["uid"]
            for name, cluster in sorted(upgrade.fleet.clusters.items()) for kind in WORKLOADS
            for obj, item in objects(cluster, kind).items()}


def ops(preview: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for step in preview["steps"]:
        found.setdefault(step["op"], []).append(step["urn"].rsplit("::", 1)[-1])
    return found


def test_1_the_b30faba_code_brings_the_stack_up(upgrade: Upgrade, monkeypatch: pytest.MonkeyPatch) -> None:
    run_with(monkeypatch, upgrade.project, upgrade.base, "up", "--yes", "--skip-preview")
    assert objects(upgrade.fleet.clusters["east"], "Deployment") or objects(upgrade.fleet.clusters["west"],
                                                                            "Deployment")


def test_2_todays_code_stops_at_the_open_cluster_gateways_until_they_say_so(upgrade: Upgrade,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """b30faba's manifests leave both clusters' gateways open without saying so (plain HTTP): today's
    program refuses them and plans nothing; the user's edit (`publicInference: true`) lets it go on."""
    refused = run_with(monkeypatch, upgrade.project, ROOT, "preview", "--json", check=False)
    assert refused.returncode != 0
    assert "InferenceCluster east: spec.gateway.publicInference: the cluster's inference Gateway would accept every " \
           "caller unauthenticated" in refused.stdout + refused.stderr
    manifests = {path.name: path.read_text() for path in sorted((upgrade.base / "tests" / "e2e" / "fleet").glob("*.yaml"))}
    upgrade.project.write_manifests({name: OPENED.sub(r"\1  gateway: {publicInference: true}\n", text)
                                     for name, text in manifests.items()})


def test_3_todays_code_previews_no_create_delete_or_replace(upgrade: Upgrade, monkeypatch: pytest.MonkeyPatch) -> None:
    done = run_with(monkeypatch, upgrade.project, ROOT, "preview", "--json")
    planned = ops(json.loads(done.stdout))
    assert {op: sorted(names) for op, names in planned.items() if op in CHANGES} == {
        "replace": sorted(REPLACED), "create": sorted(ADDED | set(RENAMED)), "delete": sorted(RENAMED.values())}


def test_4_todays_code_updates_without_deleting_or_recreating(upgrade: Upgrade, monkeypatch: pytest.MonkeyPatch) -> None:
    before = workload_identity(upgrade)
    done = run_with(monkeypatch, upgrade.project, ROOT, "up", "--yes", "--skip-preview", "--json")
    changed = [(event["resOutputsEvent"]["metadata"]["op"], event["resOutputsEvent"]["metadata"]["urn"])
               for event in events(done.stdout) if "resOutputsEvent" in event]
    # The step that deletes the replaced Job names it by the URN b30faba registered (before its alias).
    assert {urn.rsplit("::", 1)[-1] for op, urn in changed if op in CHANGES} == REPLACED | ADDED | {
        "east-job-ml-team-coder-download", "west-job-ml-team-coder-download", *RENAMED, *RENAMED.values()}
    assert {urn.rsplit("::", 1)[-1] for op, urn in changed if op == "create"} == ADDED | set(RENAMED)
    assert {urn.rsplit("::", 1)[-1] for op, urn in changed if op == "delete"} == set(RENAMED.values())
    assert {op for op, urn in changed if op in CHANGES} <= {"create", "delete", "replace", "create-replacement",
                                                            "delete-replaced"}
    after = workload_identity(upgrade)
    assert after.pop("east/Service/coder-east-0-coder-http")
    assert before.pop("east/Service/coder-east-0-coder")
    assert after == before, "no other workload object re-created"
    run_with(monkeypatch, upgrade.project, ROOT, "preview", "--expect-no-changes")
