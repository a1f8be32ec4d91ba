"""The pieces of `make demo` that need no server: where the tools come from, the demo's one edit,
what a failed pulumi command reports, and which API answers are asked again. (The demo itself runs end to end in tests/e2e/test_demo.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.local.demo import EXAMPLE, DemoError, scale
from modelplane.local.project import Project, engine_errors
from modelplane.local.servers import retry_after
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


# Shapes of the Pulumi CLI 3.259's output, as the e2e runs recorded them: `preview --json` prints one
# object whose `diagnostics` hold the errors; `up --json` prints one event per line; text output ends
# with a `Diagnostics:` section. An error late in a long output must not be lost to a tail.
PREVIEW_JSON = ('{"steps": [], "diagnostics": [{"message": "warning: ok\\n", "severity": "warning"}, '
                '{"message": "error: strict mode: ml-team/huge is short\\n", "severity": "error"}, '
                '{"message": "Traceback (most recent call last):\\n", "severity": "info#err"}]}')
UP_JSON = ('{"sequence": 1, "diagnosticEvent": {"message": "Retry #0; creation failed\\n", "severity": "info"}}\n'
           '{"sequence": 2, "diagnosticEvent": {"message": "Apply failed with 1 conflict\\n", "severity": "error"}}\n'
           '{"sequence": 3, "cancelEvent": {}}\n')
TEXT = "Previewing update (e2e):\n\nDiagnostics:\n  pulumi:pulumi:Stack (e2e):\n    error: no kubeconfig\n"


@pytest.mark.parametrize("stdout, expected", [
    (PREVIEW_JSON, "error: strict mode: ml-team/huge is short\n"),
    (UP_JSON, "Apply failed with 1 conflict\n"),
    (TEXT, "Diagnostics:\n  pulumi:pulumi:Stack (e2e):\n    error: no kubeconfig\n"),
    ("Updating (e2e):\n", "(none found)"),
])
def test_a_failed_commands_errors_are_found_in_any_output_shape(stdout: str, expected: str) -> None:
    assert engine_errors(stdout) == expected


@pytest.mark.parametrize(("code", "header", "expected"), [
    # The 429 a kube-apiserver 1.34.4 of the e2e toolset gave the demo's read-back on 2026-11-26, right
    # after `pulumi up` created the InferencePool CRD: "storage is (re)initializing", Retry-After: 1.
    (429, "1", 1.0),
    (429, None, 1.0),  # no header: one second
    (429, "soon", 1.0),  # not seconds (an HTTP date is allowed by RFC 9110; the API server sends seconds)
    (429, "120", 5.0),  # capped
    (404, "1", None),  # every other error is final
    (500, None, None),
    (409, None, None),
])
def test_only_a_429_is_asked_again_after_the_wait_the_server_gives(code: int, header: str | None,
                                                                    expected: float | None) -> None:
    assert retry_after(code, header) == expected
