"""`plan` for pull requests and CI: the comment fits GitHub's limit and carries the warnings,
`--fail-on-short`, clean errors for every bad path on the command line, and `--render` that
replaces an earlier render of the same directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from modelplane.cli import RENDER_RECORD, SHORT, main
from modelplane.report.comment import Section, fit

EXAMPLES = Path(__file__).parent.parent / "examples"
QWEN_FLEET = str(EXAMPLES / "qwen3-8b" / "fleet.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def many_deployments(directory: Path, count: int) -> str:
    """`count` copies of the qwen3-8b deployment (the fleet has room for two replicas in all)."""
    model = (EXAMPLES / "qwen3-8b" / "model.yaml").read_text()
    path = directory / "many.yaml"
    path.write_text("\n---\n".join(model.replace("name: qwen3-8b\n  namespace", f"name: qwen3-8b-{i:04}\n  namespace")
                                   for i in range(count)))
    return str(path)


FULL = "`modelplane plan --format table` prints everything.*"


@pytest.mark.parametrize(("sections", "limit", "want"), [
    ([["a", "b"]], 100, "h\n\na\nb\n"),
    ([["a" * 20] * 10], 150, f"h\n\n{'a' * 20}\n\n*9 more rows not shown: a comment holds at most 150 characters; "
                             f"{FULL}\n"),
    ([["a" * 200]], 150, f"h\n\n*Not shown, to stay under 150 characters: 1 rows; {FULL}\n"),
    ([["a"], ["b" * 300], ["c"]], 200, f"h\n\na\n\n*Not shown, to stay under 200 characters: 1 rows, 1 rows; {FULL}\n"),
    # 2 + 11 for h and the a's; the b's keep 260 - 13 - 120 (blank, blank, note) = 127 characters: 11 rows of 11
    ([["a"] * 5, ["b" * 10] * 30], 260, "h\n\na\na\na\na\na\n\n" + "bbbbbbbbbb\n" * 11 + "\n*19 more rows not shown"),
])
def test_fit_keeps_whole_sections_and_cuts_the_first_that_overflows(sections: list[list[str]], limit: int,
                                                                     want: str) -> None:
    text = fit(["h"], [Section(rows, "rows", opening=[""]) for rows in sections], limit)
    assert text.startswith(want)
    assert len(text) <= limit


def test_a_thousand_deployments_fit_one_comment_changes_and_reasons_first(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", QWEN_FLEET, many_deployments(tmp_path, 1000), "--format", "markdown")
    assert code == 0
    assert len(out) <= 65_536
    assert out.startswith("### Modelplane placement\n\n2/1000 replicas scheduled across 1 clusters; "
                          "**998 deployment(s) short**.")
    assert "more short deployments not shown: a comment holds at most 65,536 characters" in out
    assert out.count("<details>") == out.count("</details>")


def old_vllm_pair(directory: Path) -> str:
    """The prefill/decode example on a vLLM image without NIXL: a compose warning per engine."""
    model = (EXAMPLES / "prefill-decode" / "model.yaml").read_text()
    model = model.replace("key: HF_TOKEN}", "key: HF_TOKEN, optional: true}")  # no secret-not-created warning
    (directory / "model.yaml").write_text(model.replace("vllm/vllm-openai:v0.23.0", "vllm/vllm-openai:v0.10.0"))
    return str(directory / "model.yaml")


def test_plan_prints_the_same_warnings_whether_or_not_it_renders(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", str(EXAMPLES / "prefill-decode" / "fleet.yaml"), old_vllm_pair(tmp_path)]
    plain = run(capsys, *argv)
    rendering = run(capsys, *argv, "--render", str(tmp_path / "out"))
    assert plain == rendering
    assert [": warning: " in line and "predates vLLM v0.11.0" in line for line in plain[2].splitlines()] == [True] * 2


def selector(directory: Path, cel: str) -> str:
    """The qwen3-8b deployment with another selector."""
    model = (EXAMPLES / "qwen3-8b" / "model.yaml").read_text()
    (directory / "model.yaml").write_text(model.replace(
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0', cel))
    return str(directory / "model.yaml")


@pytest.mark.parametrize(("fleet", "model", "want"), [
    ("prefill-decode", old_vllm_pair, [(33, "image 'vllm/vllm-openai:v0.10.0' predates vLLM v0.11.0"),
                                       (56, "image 'vllm/vllm-openai:v0.10.0' predates vLLM v0.11.0")]),
    ("qwen3-8b", lambda d: selector(d, 'device.attributes["gpu.nvidia.com"].architecure == "Ada Lovelace"'),
     [(20, "no device publishes the attribute gpu.nvidia.com/architecure (closest: 'architecture')")]),
    ("qwen3-8b", lambda d: selector(d, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40GB")) >= 0'),
     [(20, "'40GB' is not a Kubernetes quantity")]),
    ("qwen3-8b", lambda d: selector(d, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1Ti")) >= 0'),
     [(20, 'on InferenceClass gke-l4-1x-g2, device gpu: evaluated to false; it read '
           'device.capacity["gpu.nvidia.com"].memory = 23034Mi')]),
    ("qwen3-8b", lambda d: selector(d, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'),
     []),
])
def test_validate_reports_the_warnings_plan_knows(fleet: str, model: Callable[[Path], str], want: list[tuple[int, str]],
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(EXAMPLES / fleet / "fleet.yaml"), model(tmp_path))
    assert code == 0 and out.startswith("ok: ")
    lines = err.splitlines()
    assert [line.split(": warning: ")[0] for line in lines] == [f"{tmp_path}/model.yaml:{n}" for n, _ in want]
    assert [text in line for line, (_, text) in zip(lines, want)] == [True] * len(want)


def test_the_comment_carries_the_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", str(EXAMPLES / "prefill-decode" / "fleet.yaml"), old_vllm_pair(tmp_path),
                         "--format", "markdown")
    warnings = err.splitlines()
    assert code == 0 and len(warnings) == 2
    assert "#### Warnings" in out
    assert all(f"- {line}".replace("<", "&lt;").replace(">", "&gt;") in out for line in warnings)


@pytest.mark.parametrize(("extra", "code"), [
    ([], 0),
    (["--fail-on-short"], SHORT),
])
def test_fail_on_short_exits_3_when_a_deployment_is_short(extra: list[str], code: int, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "plan", QWEN_FLEET, many_deployments(tmp_path, 2), *extra)[0] == 0
    assert run(capsys, "plan", QWEN_FLEET, many_deployments(tmp_path, 3), *extra)[0] == code


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--out", "missing/plan.md", "--out {}: cannot write the file: No such file or directory"),
    ("--out", ".", "--out {}: cannot write the file: Is a directory"),
    ("--render", "file.txt", "--render {}: it exists and is not a folder"),
    ("--state", "missing.json", "{}: cannot read the state file: No such file or directory"),
    ("--state", ".", "{}: cannot read the state file: Is a directory"),
])
def test_a_bad_path_on_the_command_line_is_a_clean_error(option: str, value: str, message: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file.txt").write_text("")
    path = str(tmp_path / value)
    code, _, err = run(capsys, "plan", str(EXAMPLES / "qwen-demo"), option, path)
    assert code == 1
    assert message.format(path, path) in err
    assert "Traceback" not in err


def test_render_removes_only_the_stale_files_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "starter" / "notes.txt"
    own.parent.mkdir(parents=True)
    own.write_text("mine")
    assert run(capsys, "plan", str(EXAMPLES / "multi-cloud"), "--render", str(tmp_path))[0] == 0
    first = set((tmp_path / RENDER_RECORD).read_text().splitlines())
    assert run(capsys, "plan", str(EXAMPLES / "qwen-demo"), "--render", str(tmp_path))[0] == 0
    second = set((tmp_path / RENDER_RECORD).read_text().splitlines())
    on_disk = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert first - second
    assert on_disk == second | {"starter/notes.txt", RENDER_RECORD}
    assert not (tmp_path / "eks-us-west").exists(), "folders left empty are removed"
