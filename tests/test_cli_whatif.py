"""`plan --state` changes in every format, and `plan --what-if`: output, errors, and the stickiness proof."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
DEMO = EXAMPLES / "multi-cloud"
Docs = list[dict[str, Any]]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "state.json"
    assert run(capsys, "plan", str(DEMO), "--format", "json", "--out", str(path))[0] == 0
    return path


def copy_demo(directory: Path, edit: Callable[[Docs], Docs]) -> Path:
    """The multi-cloud example's manifests, with `edit` applied to its documents, written under `directory`."""
    docs = [doc for file in sorted(DEMO.glob("*.yaml")) for doc in yaml.safe_load_all(file.read_text()) if doc]
    directory.mkdir()
    (directory / "all.yaml").write_text(yaml.safe_dump_all(edit(docs)))
    return directory


def named(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def drain(docs: Docs) -> Docs:
    named(docs, "InferenceCluster", "eks-us-west")["spec"]["taints"] = [
        {"key": "modelplane.ai/what-if-drain", "effect": "NoExecute"}]
    return docs


def scale(docs: Docs, replicas: int = 4) -> Docs:
    named(docs, "ModelDeployment", "qwen3-8b")["spec"]["replicas"] = replicas
    return docs


def shrink(docs: Docs) -> Docs:
    named(docs, "InferenceCluster", "gke-us-central")["spec"]["nodePools"][0]["maxNodeCount"] = 1
    return docs


def remove(docs: Docs) -> Docs:
    return [d for d in docs if not (d["kind"] == "InferenceCluster" and d["metadata"]["name"] == "onprem-us-east")]


def add_pool(docs: Docs) -> Docs:
    named(docs, "InferenceCluster", "eks-us-west")["spec"]["nodePools"].append(
        {"name": "a100-more", "className": "eks-a100-8x-p4de", "nodeCount": 1})
    return scale(docs)


@pytest.mark.parametrize("edits, edit", [
    (["drain eks-us-west"], drain),
    (["replicas ml-team/qwen3-8b=4"], scale),
    (["pool gke-us-central/l4 nodes=1"], shrink),
    (["remove onprem-us-east"], remove),
    (["replicas ml-team/qwen3-8b=4", "pool eks-us-west/a100-more class=eks-a100-8x-p4de nodes=1"], add_pool),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_a_what_if_is_what_plan_state_prints_after_the_same_edit_to_the_files(
        edits: list[str], edit: Callable[[Docs], Docs], state: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    flags = [arg for text in edits for arg in ("--what-if", text)]
    code, out, _ = run(capsys, "plan", str(DEMO), "--state", str(state), *flags, "--format", "json")
    assert code == 0
    what_if = json.loads(out)
    edited = copy_demo(tmp_path / "edited", edit)
    code, out, _ = run(capsys, "plan", str(edited), "--state", str(state), "--format", "json")
    assert code == 0
    planned = json.loads(out)
    assert what_if["after"] == {k: v for k, v in planned.items() if k != "changes"}
    replicas = [c for c in what_if["changes"] if c["change"] in ("create", "move", "remove")]
    assert replicas == [c for c in planned["changes"] if c["change"] in ("create", "move", "remove")], \
        "the replicas that change against the state are the same too"
    assert what_if["before"] == json.loads(state.read_text())


def test_a_drain_prints_moves_pools_and_who_becomes_short(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DEMO), "--what-if", "drain eks-us-west")
    assert code == 0
    lines = out.splitlines()
    assert lines[:12] == [
        "WHAT-IF: drain eks-us-west",
        "CHANGES: 0 to create, 1 to move, 1 to remove",
        "",
        "DEPLOYMENT            REPLICAS    CHANGE",
        "ml-team/llama-70b-pd  1/1 -> 0/1  remove eks-us-west#0 (prefill: h100, decode: a100)",
        "ml-team/qwen3-8b      2/2 -> 2/2  move eks-us-west#0 (qwen3-8b: h100) -> gke-us-central#1 (qwen3-8b: l4)",
        "",
        "POOL               NODES USED  FREE",
        "eks-us-west/a100   1/2 -> 0/2  1 -> 2",
        "eks-us-west/h100   1/2 -> 0/2  1 -> 2",
        "gke-us-central/l4  2/4 -> 3/4  2 -> 1",
        "",
    ]
    assert lines[12] == "BECOMES SHORT"
    assert lines[13].startswith("ml-team/llama-70b-pd: 0/3 clusters can host another replica of ml-team/llama-70b-pd")


def test_a_what_if_in_markdown_lists_the_edits_and_the_changes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(DEMO), "--what-if", "replicas ml-team/qwen3-8b=3", "--format", "markdown")
    assert code == 0
    assert out.splitlines()[:10] == [
        "### Modelplane what-if", "", "Edits: `replicas ml-team/qwen3-8b=3`", "",
        # the third 1-GPU replica shares the H100 node the prefill engine (4 GPUs) and the first hold
        "Fleet cost: 140.99 USD/h + 4 unpriced node(s) -> 140.99 USD/h + 4 unpriced node(s), no change", "",
        "#### Changes: 1 to create, 0 to move, 0 to remove", "",
        "| Deployment | Replicas | Change |", "|---|---|---|"]
    assert "| `ml-team/qwen3-8b` | 2/2 -> 3/3 | create `eks-us-west#1 (qwen3-8b: h100)` |" in out


@pytest.mark.parametrize("edit, message", [
    ("drain nowhere", "--what-if: no InferenceCluster 'nowhere' (clusters: eks-us-west, gke-us-central, "
                      "onprem-us-east)"),
    ("pool eks-us-west/b200 nodes=1", "--what-if: cluster eks-us-west has no pool 'b200' (pools: a100, h100)"),
    ("replicas ml-team/nope=2", "--what-if: no ModelDeployment 'ml-team/nope' (deployments: "
                                "ml-team/kimi-k2-instruct, ml-team/llama-70b-pd"),
    ("pool gke-us-central/a100 class=eks-a100-8x-p4de nodes=1",
     "--what-if: InferenceClass 'eks-a100-8x-p4de' has no provisioning for GKE, so cluster gke-us-central cannot "
     "have a pool of it (classes it can: gke-l4-1x-g2)"),
    ("scale everything", "--what-if: cannot read the edit 'scale everything'"),
])
def test_a_bad_what_if_is_an_input_error(edit: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", str(DEMO), "--what-if", edit)
    assert (code, out) == (1, "")
    assert message in err and "Traceback" not in err


def test_what_if_cannot_render(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", str(DEMO), "--what-if", "drain eks-us-west", "--render", str(tmp_path))
    assert code == 2 and "--render cannot be combined with --what-if" in err


def test_plan_state_with_nothing_to_change_says_so_in_every_format(state: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    table = run(capsys, "plan", str(DEMO), "--state", str(state))[1]
    assert table.startswith("CHANGES: no placement changes\n\nCLUSTER ")
    assert "ml-team/qwen3-8b          2/2       unchanged  eks-us-west#0 (qwen3-8b: h100)\n" in table
    markdown = run(capsys, "plan", str(DEMO), "--state", str(state), "--format", "markdown")[1]
    assert "\n#### Changes: no placement changes\n" in markdown
    assert "| `ml-team/qwen-demo` | 1/1 | `gke-us-central#0 (qwen: l4)` | unchanged |" in markdown
    document = json.loads(run(capsys, "plan", str(DEMO), "--state", str(state), "--format", "json")[1])
    assert document["changes"] == []


def test_plan_state_marks_created_moved_and_removed_replicas(state: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Drain EKS and scale qwen3-8b to 3 in the files: one replica moves, one is new, one goes away
    (the copied files list the prefill/decode engines in key order)."""
    edited = copy_demo(tmp_path / "edited", lambda docs: scale(drain(docs), replicas=3))
    table = run(capsys, "plan", str(edited), "--state", str(state))[1]
    assert table.splitlines()[:6] == [
        "CHANGES: 1 to create, 1 to move, 1 to remove",
        "",
        "DEPLOYMENT            REPLICAS    CHANGE",
        "ml-team/llama-70b-pd  1/1 -> 0/1  remove eks-us-west#0 (decode: a100, prefill: h100)",
        "ml-team/qwen3-8b      2/2 -> 3/3  move eks-us-west#0 (qwen3-8b: h100) -> gke-us-central#1 (qwen3-8b: l4)",
        "                                  create gke-us-central#2 (qwen3-8b: l4)",
    ]
    assert "ml-team/llama-70b-pd      0/1       remove     eks-us-west#0 (decode: a100, prefill: h100)" in table
    assert "\n                                    move       gke-us-central#1 (qwen3-8b: l4)\n" in table
    markdown = run(capsys, "plan", str(edited), "--state", str(state), "--format", "markdown")[1]
    assert ("| `ml-team/qwen3-8b` | 2/2 -> 3/3 | move `eks-us-west#0 (qwen3-8b: h100)` -> "
            "`gke-us-central#1 (qwen3-8b: l4)`<br>create `gke-us-central#2 (qwen3-8b: l4)` |") in markdown
    assert "| unchanged<br>moved from `eks-us-west#0 (qwen3-8b: h100)`<br>create |" in markdown
    assert "| `eks-us-west/a100` | 1/2 -> 0/2 | 1 -> 2 |" in markdown
    document = json.loads(run(capsys, "plan", str(edited), "--state", str(state), "--format", "json")[1])
    assert [(c["change"], c["deployment"]) for c in document["changes"] if "from" in c or "to" in c] == [
        ("remove", "ml-team/llama-70b-pd"), ("move", "ml-team/qwen3-8b"), ("create", "ml-team/qwen3-8b")]


def test_a_plan_with_changes_reads_back_as_state(state: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    second = tmp_path / "second.json"
    assert run(capsys, "plan", str(DEMO), "--state", str(state), "--format", "json", "--out", str(second))[0] == 0
    assert "changes" in json.loads(second.read_text())
    code, out, _ = run(capsys, "plan", str(DEMO), "--state", str(second))
    assert code == 0 and out.startswith("CHANGES: no placement changes")


def test_the_readme_shows_what_a_drain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    command = "modelplane plan examples/multi-cloud --what-if 'drain eks-us-west'"
    readme = (EXAMPLES.parent / "README.md").read_text()
    shown = readme.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    argv = [str(EXAMPLES.parent / arg) if arg.startswith("examples/") else arg for arg in shlex.split(command)[1:]]
    assert run(capsys, *argv)[1] == shown


SCALED = [str(EXAMPLES / "qwen3-8b" / "fleet.yaml"), str(EXAMPLES / "scaled.yaml")]


def test_capacity_prints_what_if_edits_that_place_the_short_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "capacity", *SCALED, "--format", "json")
    assert code == 0
    found = json.loads(out)
    assert found == {"suggestions": [{"deployments": ["ml-team/qwen3-8b"], "edits": ["pool starter/l4 nodes=3"],
                                      "addedNodes": 1, "addedCostPerHour": "0.8536 USD"}], "unplaceable": []}
    for suggestion in found["suggestions"]:
        flags = [arg for edit in suggestion["edits"] for arg in ("--what-if", edit)]
        after = json.loads(run(capsys, "plan", *SCALED, *flags, "--format", "json")[1])["after"]
        assert all(after["deployments"][key]["scheduled"] == after["deployments"][key]["desired"]
                   for key in suggestion["deployments"])


def test_capacity_lists_as_many_alternatives_as_asked_best_first(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    scaled = str(copy_demo(tmp_path / "scaled", lambda docs: scale(docs, 40)))
    listed = {n: json.loads(run(capsys, "capacity", scaled, "--format", "json", *flags)[1])["suggestions"]
              for n, flags in ((1, ()), (3, ("--alternatives", "3")), (0, ("--alternatives", "0")))}
    assert len(listed[1]) == 1 and len(listed[3]) == 3 and len(listed[0]) >= 3
    assert listed[3][0] == listed[1][0] and listed[0][:3] == listed[3]
    assert [s["addedNodes"] for s in listed[3]] == sorted(s["addedNodes"] for s in listed[3])
    with pytest.raises(SystemExit) as exit_:
        main(["capacity", scaled, "--alternatives", "-1"])
    assert exit_.value.code == 2 and "expected a whole number of 0 or more, got '-1'" in capsys.readouterr().err


def test_capacity_searches_only_the_deployments_named(capsys: pytest.CaptureFixture[str]) -> None:
    every = run(capsys, "capacity", *SCALED, "--format", "json")[1]
    assert run(capsys, "capacity", *SCALED, "--deployment", "ml-team/qwen3-8b", "--format", "json")[1] == every
    assert run(capsys, "capacity", str(DEMO), "--deployment", "ml-team/qwen3-8b") == \
        (0, "every deployment asked about is fully placed: no capacity change is needed\n", "")
    code, out, err = run(capsys, "capacity", *SCALED, "--deployment", "ml-team/nope")
    assert (code, out) == (1, "")
    assert "no ModelDeployment 'ml-team/nope' in the manifests (declared: ml-team/qwen3-8b)" in err


def test_capacity_searches_with_the_placement_in_the_state_file(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.json"
    assert run(capsys, "plan", *SCALED, "--format", "json", "--out", str(state))[0] == 0
    kept = run(capsys, "capacity", *SCALED, "--state", str(state), "--format", "json")
    assert kept == run(capsys, "capacity", *SCALED, "--format", "json"), \
        "the two replicas stay where the plan put them, and the third needs the same node"
    state.write_text("{not json")
    code, out, err = run(capsys, "capacity", *SCALED, "--state", str(state))
    assert (code, out) == (1, "")
    assert f"{state}: the state file is not JSON" in err


def test_the_readme_shows_what_capacity_prints(capsys: pytest.CaptureFixture[str]) -> None:
    command = "modelplane capacity examples/qwen3-8b/fleet.yaml examples/scaled.yaml"
    readme = (EXAMPLES.parent / "README.md").read_text()
    shown = readme.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    assert run(capsys, "capacity", *SCALED)[1] == shown


def test_the_comment_shows_the_fleet_cost_and_its_change_against_the_state(state: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    edited = copy_demo(tmp_path / "edited", scale)
    markdown = run(capsys, "plan", str(edited), "--state", str(state), "--format", "markdown")[1]
    assert ("\nFleet cost: 140.99 USD/h + 4 unpriced node(s) -> 141.85 USD/h + 4 unpriced node(s), +0.85 USD/h\n"
            in markdown), "qwen3-8b's two new replicas share the H100 node already held and take an L4 node (0.8536)"
    table = run(capsys, "plan", str(edited), "--state", str(state))[1]
    assert "fleet in the --state placement         140.99 USD/h + 4 unpriced node(s)\n" in table
    assert "change                                 +0.85 USD/h\n" in table


@pytest.mark.parametrize("edit, code", [("drain eks-us-west", 3), ("replicas ml-team/qwen3-8b=3", 0)])
def test_fail_on_short_judges_the_fleet_after_the_edits(edit: str, code: int,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "plan", str(DEMO), "--what-if", edit, "--fail-on-short")[0] == code
