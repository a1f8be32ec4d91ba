"""The pieces of `make demo` that need no server: where the tools come from, and the demo's one edit.
(The demo itself runs end to end in tests/e2e/test_demo.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.local.demo import EXAMPLE, DemoError, scale
from modelplane.local.project import Project
from modelplane.local.toolset import find_toolset
from modelplane.scheduling import place


def test_tools_on_path_are_used_when_all_three_are_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("pulumi", "kube-apiserver", "etcd"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = find_toolset(say=pytest.fail)  # nothing to announce: no build
    assert (found.binaries, found.path, found.offline) == (
        {"kube-apiserver": tmp_path / "kube-apiserver", "etcd": tmp_path / "etcd"}, (tmp_path,), False)


def test_the_demo_scales_chat_by_one_replica_in_the_stacks_copy(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "manifests")
    project = Project(tmp_path, ())
    scale(project, "chat", 2, 3)
    manifests = load([tmp_path / "manifests"])
    placement = place(manifests.fleet, manifests.workloads)
    assert placement.deployments["ml-team/chat"].scheduled == 3
    with pytest.raises(DemoError, match="has 3 replicas, expected 2"):
        scale(project, "chat", 2, 3)
