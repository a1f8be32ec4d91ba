"""`pulumi preview --diff` as a reviewer reads it: the real engine's text for the Placement resource.

One stack on the two-cluster fleet (the manifests of tests/e2e/fleet, set up as test_pulumi_engine
does: Existing clusters `east` and `west`, brownfield, no readiness waits) is brought up once. Then
edits are previewed with `--diff` and the Placement resource's part of the engine's text is read:
it names the deployment whose replicas change, the new replica and the edited manifest, in a few
lines, and never prints the manifests themselves. A stack that did not change shows no diff.
docs/pulumi.md shows two of these texts; the tests below compare them with what the engine prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.gateways import gateway_addresses
from modelplane.local.project import Project
from modelplane.local.servers import Fleet

FLEET = ROOT / "tests" / "e2e" / "fleet"
PLACEMENT_HEADER = "pulumi-python:dynamic/modelplane:Placement:"
MANIFEST_API = "modelplane.ai/v1alpha1"
"""The apiVersion of every modelplane manifest: printed only if a manifest is."""
Stack = tuple[Project, dict[str, str]]
CHAT_REPLICAS = "name: chat\n  namespace: ml-team\nspec:\n  replicas: 2"
DOCS = ROOT / "docs" / "pulumi.md"
WEST = "    modelplane.ai/region: us-west\nspec:\n"


def documented(label: str) -> list[str]:
    """The lines of the docs/pulumi.md block under `<!-- output of tests/e2e/test_preview_diff.py: LABEL -->`."""
    marker = f"<!-- output of tests/e2e/test_preview_diff.py: {label} -->\n```\n"
    text = DOCS.read_text()
    start = text.index(marker) + len(marker)
    return text[start:text.index("```", start)].splitlines()


def placement_part(text: str) -> list[str]:
    """The Placement resource's lines of a `preview --diff` text: its header and every line indented
    deeper than it (the next resource, or the outputs, start at the header's indentation)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if PLACEMENT_HEADER in line), None)
    if start is None:
        return []
    indent = len(lines[start]) - len(lines[start].lstrip())
    part = [lines[start]]
    for line in lines[start + 1:]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        part.append(line)
    return part


@pytest.fixture(scope="module")
def stack(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The stack, up, and its manifests as written."""
    project = Project.create(tmp_path_factory.mktemp("stack"), tools)
    manifests = {path.name: path.read_text() for path in sorted(FLEET.glob("*.yaml"))}
    project.deploy_to(fleet.clusters, manifests, "hf_e2e_preview_diff")
    with gateway_addresses(fleet.clusters):
        project.up()
        yield project, manifests


def test_an_unchanged_stack_shows_no_placement_diff(stack: Stack) -> None:
    project, _ = stack
    text = project.preview_diff()
    assert placement_part(text) == [] and MANIFEST_API not in text, text
    project.run("preview", "--expect-no-changes")


def test_scaling_one_deployment_names_it_its_new_replica_and_its_manifest(stack: Stack) -> None:
    project, manifests = stack
    project.write_manifests({**manifests, "models.yaml": manifests["models.yaml"].replace(
        CHAT_REPLICAS, CHAT_REPLICAS.replace("replicas: 2", "replicas: 3"))})
    text = project.preview_diff()
    part = placement_part(text)
    shown = [line.strip() for line in part]
    assert shown[0].endswith(f"{PLACEMENT_HEADER} (update)"), part
    assert {"~ objectsDigest (hidden)", "~ placement (hidden)", '+ east#1: "chat: h100"',
            '~ scheduled: "2/2" => "3/3"'} <= set(shown), "\n".join(part)
    assert "~ ml-team/chat: {" in shown and any(line.startswith("~ ModelDeployment ml-team/chat: ") for line in shown)
    assert not [line for line in shown if "coder" in line or "ml-team/pd" in line or "Inference" in line], \
        "\n".join(part)
    assert len(part) <= 20, "\n".join(part)
    assert MANIFEST_API not in text, "no manifest is printed anywhere in the preview"
    assert part == documented("scaling ml-team/chat from 2 to 3")


def test_tainting_a_cluster_shows_the_move_as_one_slot_deleted_and_one_added(stack: Stack) -> None:
    project, manifests = stack
    assert WEST in manifests["fleet.yaml"]
    project.write_manifests({**manifests, "fleet.yaml": manifests["fleet.yaml"].replace(
        WEST, WEST + "  taints:\n  - key: maintenance\n    effect: NoExecute\n")})
    part = placement_part(project.preview_diff())
    start = next(i for i, line in enumerate(part) if line.strip() == "~ deployments: {")
    assert part[start:] == documented("tainting west NoExecute"), "\n".join(part)


def test_an_edit_that_moves_nothing_names_only_its_manifest(stack: Stack) -> None:
    project, manifests = stack
    project.write_manifests({**manifests, "models.yaml": manifests["models.yaml"].replace(
        "vllm/vllm-openai:v0.23.0", "vllm/vllm-openai:v0.24.0", 1)})
    part = placement_part(project.preview_diff())
    shown = [line.strip() for line in part]
    assert shown[3:] == ["~ objectsDigest (hidden)", "~ manifests: {", shown[5], "}"], "\n".join(part)
    assert shown[5].startswith("~ ModelDeployment ml-team/chat: "), "\n".join(part)
