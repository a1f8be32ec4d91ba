"""What `pip install modelplane` (no extras) gives, and what a missing extra says.

The CLI's offline commands run with every Pulumi, cloud and Kubernetes-client package made
unimportable (a meta path finder refuses them, as a CLI-only install lacks them); a command that
needs one names the extra of pyproject.toml that installs it, exits 1 and prints no traceback.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import modelplane
from modelplane.cli import main
from modelplane.io.extras import EXTRAS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
from modelplane.cli import main
sys.exit(main(sys.argv[1:]))
"""


def cli_only(*argv: str) -> subprocess.CompletedProcess[str]:
    code = BLOCKER.format(blocked=sorted(EXTRAS))
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_every_extra_named_is_declared_and_installs_its_module() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, extra in EXTRAS.items():
        names = " ".join(declared[extra]).lower().replace("-", "_")
        assert module in names or extra == "control" and module == "urllib3", (module, extra)


@pytest.mark.parametrize("argv", [
    ("validate", "examples/multi-cloud"),
    ("plan", "examples/multi-cloud"),
    ("explain", "ml-team/qwen3-8b", "examples/multi-cloud"),
    ("capacity", "examples/multi-cloud"),
    ("crds",),
])
def test_the_offline_commands_need_no_extra(argv: tuple[str, ...]) -> None:
    done = cli_only(*argv)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr[-2000:]
    assert done.stdout


def test_reconcile_without_the_kubernetes_client_names_the_extra() -> None:
    done = cli_only("reconcile")
    assert done.returncode == 1
    assert done.stderr == ("modelplane reconcile needs the Python package 'kubernetes', which modelplane's 'control' "
                           "extra installs: pip install 'modelplane[control]'\n")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["--version"])
    assert raised.value.code == 0
    assert capsys.readouterr().out == f"modelplane {modelplane.__version__}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", modelplane.__version__)


def test_explain_takes_control_cluster_as_validate_and_plan_do(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    for path in (EXAMPLES / "qwen-demo").glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text().replace("  cluster: starter\n  plainHTTP", "  plainHTTP"))
    assert main(["explain", "ml-team/qwen-demo", str(tmp_path)]) == 1, "without it the gateway needs spec.cluster"
    capsys.readouterr()
    assert main(["explain", "ml-team/qwen-demo", str(tmp_path), "--control-cluster"]) == 0
    assert "qwen-demo" in capsys.readouterr().out


def pins(lines: list[str]) -> set[str]:
    return {line.split("#")[0].strip().lower() for line in lines
            if line.split("#")[0].strip() and not line.startswith(("-r", "modelplane["))}


def test_the_requirements_files_pin_what_pyproject_pins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    runtime = pins([*project["dependencies"], *(d for extra in ("pulumi", "clouds", "control", "gcp", "aws", "azure",
                                                                 "nebius", "vultr") for d in extras[extra])])
    assert pins((ROOT / "requirements.txt").read_text().splitlines()) == runtime
    assert pins((ROOT / "requirements-dev.txt").read_text().splitlines()) == pins(extras["test"])
