"""`make demo` end to end: the demo runs (real servers, the real engine), prints the steps the README
lists, applies only the new replica's objects when it scales, and leaves nothing running.

The demo runs as `make demo` runs it (`python -m modelplane.local.demo`, from the checkout) with a
PATH that holds no `pulumi`, `kube-apiserver` or `etcd`, so it takes the built toolset as a new
user without them would, and a scratch `--dir`. What differs from run to run is replaced before
comparing: durations, ports, the scratch directory (`.demo`) and the home directory (`~`).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from modelplane.local.demo import REAL_CLUSTER
from modelplane.local.project import CHECKOUT
from modelplane.local.toolset import REQUIRED

DEMO_SECONDS = 1800
VARYING = [(re.compile(r"\d+\.\d s\b"), "N s"), (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
           (re.compile(r"\(\d+s this run\)"), "(Ns this run)"),
           (re.compile(r"modelplane-e2e/[0-9a-f]{16}/"), "modelplane-e2e/KEY/")]
README_BLOCK = re.compile(r"^```\n\$ make demo\n(?P<shown>.*?)^```", re.S | re.M)
"""The README's `make demo` block (tests/test_docs.py leaves it to this module)."""


def normalized(text: str, directory: Path | None = None) -> str:
    if directory is not None:
        text = text.replace(str(directory), ".demo")
    text = text.replace(f"{Path.home()}/", "~/")
    for pattern, replacement in VARYING:
        text = pattern.sub(replacement, text)
    return text


@pytest.fixture(scope="module")
def demo(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    directory = tmp_path_factory.mktemp("demo") / "state"
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any((Path(d) / name).exists() for name in REQUIRED)]
    env = {**os.environ, "PATH": os.pathsep.join(kept)}
    done = subprocess.run([sys.executable, "-m", "modelplane.local.demo", "--dir", str(directory)], cwd=CHECKOUT,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=DEMO_SECONDS)
    return done, directory


def test_the_demo_converges_and_prints_the_steps_the_readme_lists(demo: tuple[subprocess.CompletedProcess[str], Path]
                                                                  ) -> None:
    done, directory = demo
    assert done.returncode == 0, done.stdout[-6000:]
    text = normalized(done.stdout, directory)
    steps = [line for line in text.splitlines() if re.match(r"\[\d/5\]|      pulumi up", line)]
    assert [re.sub(r" \.\.\. done in N s.*", "", line) for line in steps] == [
        "[1/5] starting etcd and the kube-apiservers of east and west",
        "[2/5] creating stack 'demo' (file:// backend in .demo/stack)",
        "[3/5] pulumi preview",
        "[4/5] pulumi up",
        "[5/5] scaling ml-team/chat from 2 to 3 replicas: pulumi preview",
        "      pulumi up"], text
    assert "ml-team/chat   2/2   east#0 (chat: l4), west#0 (chat: l4)" in text
    assert "ml-team/chat   3/3   east#0 (chat: l4), east#1 (chat: l4), west#0 (chat: l4)" in text
    assert REAL_CLUSTER in done.stdout


def test_the_readme_shows_what_the_demo_prints(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, directory = demo
    blocks = README_BLOCK.findall((CHECKOUT / "README.md").read_text())
    assert len(blocks) == 1, "README.md has one `$ make demo` block"
    assert normalized(blocks[0]) == normalized(done.stdout, directory)


def test_the_preview_counts_each_clusters_objects_on_that_cluster(
        demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """Each cluster's line counts what lands there (step 4 lists it from the API servers): the serving
    engines of its replicas, and on `east` the LeaderWorkerSet of the `coder` gang and the fleet gateway."""
    done, _ = demo
    counted = dict(re.findall(r"^        (east|west|program): \d+ \((.*)\)$", done.stdout, re.M))
    assert set(counted) == {"east", "west", "program"}, done.stdout
    assert "1 Deployment" in counted["east"] and "1 LeaderWorkerSet" in counted["east"], counted
    assert "1 Deployment" in counted["west"] and "LeaderWorkerSet" not in counted["west"], counted
    assert "Deployment" not in counted["program"] and "1 Placement" in counted["program"], counted


def test_scaling_creates_only_the_new_replicas_objects(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, _ = demo
    scaled = done.stdout.split("[5/5]", 1)[1]
    created = [line.split()[-1] for line in scaled.splitlines() if line.strip().startswith("create ")]
    assert created, scaled
    assert all("chat-east-1" in name for name in created), created
    assert not [line for line in scaled.splitlines() if line.strip().startswith("delete ")]


def test_nothing_is_left_running(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, directory = demo
    ports = [int(port) for port in re.findall(r"https://127\.0\.0\.1:(\d+)", done.stdout)]
    assert len(ports) == 2
    for port in ports:
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"something still listens on {port}"
    left = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and str(directory) in cmdline:
            left.append(cmdline)
    assert left == []
