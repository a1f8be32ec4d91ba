"""The command line: output formats, the placement document, `--state` replay, exit codes, imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modelplane.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
DEMO = str(EXAMPLES / "multi-cloud")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_counts_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(EXAMPLES / "qwen-demo"))
    assert (code, out) == (0, "ok: 5 manifests (1 InferenceClass, 1 InferenceCluster, 1 InferenceGateway, "
                              "1 ModelDeployment, 1 ModelService)\n")
    assert err.endswith("fleet.yaml:57: warning: InferenceGateway fleet: spec.plainHTTP: the fleet gateway serves "
                        "plain HTTP and reaches the clusters' gateways over plain HTTP, which take every caller "
                        "(publicInference): anyone on the path reads prompts and completions, and without auth anyone who reaches it can call every model; a local demo "
                        "only (set tls and clusterTLS for anything else)\n"), "the demo's plain HTTP is warned about"


def test_plan_json_is_the_documented_placement_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(EXAMPLES / "qwen3-coder"), "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "version": 1,
        "replicas": [{
            "deployment": "ml-team/qwen3-coder", "cluster": "eks-us-west", "index": 0,
            "engines": {"qwen3-coder": {
                "Leader": {"pool": "h200", "nodes": 1, "sharedPods": 0,
                           "devices": [{"device": "gpu", "count": 8, "perNode": 8}], "requests": [{
                    "name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 8,
                    "selectors": ['device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("120Gi")) >= 0\n']}]},
                "Worker": {"pool": "h200", "nodes": 1, "sharedPods": 0,
                           "devices": [{"device": "gpu", "count": 8, "perNode": 8}], "requests": [{
                    "name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 8,
                    "selectors": ['device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("120Gi")) >= 0\n']}]},
            }},
        }],
        "deployments": {"ml-team/qwen3-coder": {"desired": 1, "scheduled": 1, "reasons": []}},
    }


def test_plan_is_byte_identical_across_runs(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "plan", DEMO, "--format", "json")
    assert run(capsys, "plan", DEMO, "--format", "json") == first


def test_plan_state_replays_stickiness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster added ahead of the others (by name) would win every tie; with --state nothing moves."""
    state = tmp_path / "state.json"
    assert run(capsys, "plan", DEMO, "--format", "json", "--out", str(state))[0] == 0
    newcomer = (EXAMPLES / "multi-cloud" / "fleet.yaml").read_text().split("---\n")[4].replace(
        "name: gke-us-central", "name: aaa-new").replace("nodeCount: 1\n    minNodeCount: 0\n    maxNodeCount: 4",
                                                          "nodeCount: 8")
    (tmp_path / "new.yaml").write_text(newcomer)
    code, out, _ = run(capsys, "plan", DEMO, str(tmp_path / "new.yaml"), "--format", "json", "--state", str(state))
    assert code == 0
    before = json.loads(state.read_text())
    after = json.loads(out)
    assert after["replicas"] == before["replicas"]
    without_state = json.loads(run(capsys, "plan", DEMO, str(tmp_path / "new.yaml"), "--format", "json")[1])
    assert without_state["replicas"] != before["replicas"], "the newcomer should attract replicas without state"


def test_plan_table_shows_pools_and_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(EXAMPLES / "kimi-k2"))
    assert code == 0
    assert out.splitlines() == [
        "CLUSTER                 POOL      CLASS           NODES USED  FREE  DEVICES USED",
        "prod-coreweave-us-east  medium    hgx-h100-8x     0/8         8     gpu 0/64",
        "prod-coreweave-us-east  frontier  hgx-h200-8x-ib  2/4         2     gpu 16/32",
        "",
        "DEPLOYMENT                         REPLICAS  WHERE",
        "ml-team-research/kimi-k2-instruct  1/1       prod-coreweave-us-east#0 (kimi-k2: frontier)",
    ]


def test_plan_markdown_reports_a_short_deployment_with_its_reasons(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    model = (EXAMPLES / "qwen3-8b" / "model.yaml").read_text().replace("replicas: 1", "replicas: 3")
    (tmp_path / "model.yaml").write_text(model)
    code, out, _ = run(capsys, "plan", str(EXAMPLES / "qwen3-8b" / "fleet.yaml"), str(tmp_path / "model.yaml"),
                       "--format", "markdown")
    assert code == 0, "a short deployment is reported, not an error"
    assert "2/3 replicas scheduled across 1 clusters; **1 deployment(s) short**" in out
    assert "| `ml-team/qwen3-8b` | 2/3 | `starter#0 (qwen3-8b: l4)`<br>`starter#1 (qwen3-8b: l4)` |" in out
    assert ("- 0/1 clusters can host another replica of ml-team/qwen3-8b: 1 pool(s) had too few free nodes "
            "(needs 1, has 0)") in out


@pytest.mark.parametrize("argv, code", [
    (["plan"], 2),
    (["plan", DEMO, "--format", "yaml"], 2),
    (["frobnicate"], 2),
    (["plan", "/nonexistent"], 1),
    (["explain", "ml-team/nope", DEMO], 1),
])
def test_exit_codes(argv: list[str], code: int, capsys: pytest.CaptureFixture[str]) -> None:
    if code == 2:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    else:
        assert main(argv) == code
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["plan", DEMO, "--format", "json"], ["plan", "/nonexistent"]], ids=["ok", "error"])
def test_a_command_leaves_the_garbage_collector_as_it_found_it(argv: list[str]) -> None:
    import gc

    assert gc.isenabled()
    main(argv)
    assert gc.isenabled()
    gc.disable()
    try:
        main(argv)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("content, message", [
    ("{not json", "the state file is not JSON"),
    (b'{"version": "\xff"}', "the state file is not JSON"),
    ('{"version": 1, "replicas": [{"deployment": "a/b"}]}', "replicas.0.cluster: Field required"),
    ('{"version": 2}', "version: this is placement version 2; Modelplane reads version 1"),
])
def test_a_bad_state_file_is_an_input_error(content: str | bytes, message: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.json"
    state.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, _, err = run(capsys, "plan", DEMO, "--state", str(state))
    assert code == 1
    assert f"{state}: " in err and message in err


def test_explain_names_the_skipped_pool_and_the_value_it_read(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "ml-team-research/kimi-k2-instruct", str(EXAMPLES / "kimi-k2"))
    assert code == 0
    assert "cluster prod-coreweave-us-east (replica #0): another replica fits on kimi-k2: frontier" in out
    assert 'skipped pool medium: had no device matching request gpu' in out
    assert 'it read device.capacity["gpu.nvidia.com"].memory = 81559Mi' in out


def test_explain_names_the_engine_on_the_pool_lines_of_a_prefill_decode_pair(capsys: pytest.CaptureFixture[str]) -> None:
    """The multi-cloud pair: prefill asks for Hopper (only eks-us-west/h100), decode for 80Gi (the
    H100's 81559Mi is less; the A100's 81920Mi is not)."""
    code, out, _ = run(capsys, "explain", "ml-team/llama-70b-pd", DEMO)
    assert code == 0
    lines = out.splitlines()
    assert "cluster eks-us-west (replica #0): another replica fits on prefill: h100, decode: a100" in lines
    assert any(line.startswith("  skipped pool a100 for engine prefill: had no device matching request gpu: ")
               for line in lines)
    assert any(line.startswith("  skipped pool h100 for engine decode: had no device matching request gpu: ")
               for line in lines)
    assert any(line.startswith("  pool l4 for engine prefill: had no device matching request gpu: ") for line in lines)


def test_explain_numbers_each_replica_a_cluster_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/scaled.yaml asks for three replicas of qwen3-8b where two fit: both on starter."""
    code, out, _ = run(capsys, "explain", "ml-team/qwen3-8b", str(EXAMPLES / "qwen3-8b" / "fleet.yaml"),
                       str(EXAMPLES / "scaled.yaml"))
    assert code == 0
    assert "cluster starter (replicas #0, #1):" in out.splitlines()


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                          cwd=EXAMPLES.parent).stdout.strip()


def test_help_and_import_do_not_touch_pulumi_or_the_cloud_sdks() -> None:
    out = _python("import sys\nfrom modelplane.cli import main\n"
                  "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                  "print(sorted(m for m in ('pulumi', 'pulumi_gcp', 'pulumi_aws', 'pulumi_kubernetes') "
                  "if m in sys.modules))")
    assert out.splitlines()[-1] == "[]"


def test_the_core_imports_no_pulumi() -> None:
    out = _python("import sys\nimport modelplane.api, modelplane.cel, modelplane.scheduling\n"
                  "from modelplane.api import load\nfrom modelplane.scheduling import place\n"
                  "m = load(['examples/multi-cloud'])\nplace(m.fleet, m.workloads)\n"
                  "print('pulumi' in sys.modules)")
    assert out == "False"


def _process(*argv: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelplane", *argv], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, cwd=EXAMPLES.parent, timeout=120)


def test_the_process_writes_everything_and_keeps_the_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    """`run()` exits without interpreter shutdown: the output must still be whole and the code kept."""
    in_process = run(capsys, "plan", DEMO, "--format", "json")[1]
    done = _process("plan", DEMO, "--format", "json")
    assert (done.returncode, done.stdout) == (0, in_process)
    out = tmp_path / "placement.json"
    assert _process("plan", DEMO, "--format", "json", "--out", str(out)).returncode == 0
    assert out.read_text() == in_process
    short = _process("plan", str(EXAMPLES / "kimi-k2"), "--what-if", "replicas ml-team-research/kimi-k2-instruct=9",
                     "--fail-on-short")
    assert short.returncode == 3 and "Traceback" not in short.stderr
    missing = _process("plan", "/nonexistent")
    assert missing.returncode == 1 and missing.stderr and "Traceback" not in missing.stderr


@pytest.mark.parametrize("argv", [["plan", DEMO, "--format", "json"], ["explain", "ml-team/qwen3-8b", DEMO]],
                         ids=["written", "printed"])
def test_an_output_that_cannot_be_written_is_reported(argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = _process(*argv, stdout=full.fileno())
    assert done.returncode == 1
    assert "cannot write the output" in done.stderr and "Traceback" not in done.stderr
