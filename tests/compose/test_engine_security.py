"""A template asks for root (or its own user, group and baseline capabilities) only through the engine
container's `securityContext`, validated; everything else stays hardened (issue 23).

Expected values: the issue ("a documented, validated way for a template to ask for root"), and Pod
Security "baseline"'s list of capabilities a container may add (kubernetes.io/docs/concepts/security/
pod-security-standards: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE,
SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT), which every namespace Modelplane renders enforces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, load_sources
from modelplane.compose import render
from modelplane.scheduling import place
from tests.compose.schemas import problems

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qwen3-8b"
IMAGE = "            image: vllm/vllm-openai:v0.23.0\n"


def engine_context(security: str) -> dict:
    """The rendered engine container's securityContext of qwen3-8b with `security` under its image."""
    sources = [(str(p), p.read_text().replace(IMAGE, IMAGE + security)) for p in sorted(EXAMPLE.glob("*.yaml"))]
    manifests = load_sources(sources)
    out = render(manifests, place(manifests.fleet, manifests.workloads))
    [deployment] = {m["metadata"]["name"]: m for ms in out.clusters.values() for m in ms
                    if m["kind"] == "Deployment"}.values()
    assert problems(deployment) == []
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return container["securityContext"]


HARDENED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.mark.parametrize("security, want", [
    ("", HARDENED),
    ("            securityContext: {runAsUser: 0}\n", {**HARDENED, "runAsUser": 0}),
    ("            securityContext: {runAsUser: 1000, runAsGroup: 1000}\n", {**HARDENED, "runAsUser": 1000,
                                                                              "runAsGroup": 1000}),
    ("            securityContext: {capabilities: {add: [CHOWN, SETUID]}}\n",
     {**HARDENED, "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "SETUID"]}}),
], ids=["nothing asked: the image's user, hardened", "root, asked for explicitly", "a user and group",
        "baseline capabilities added back"])
def test_what_a_template_may_ask_for(security: str, want: dict) -> None:
    assert engine_context(security) == want


@pytest.mark.parametrize("security, field", [
    ("            securityContext: {privileged: true}\n", "securityContext.privileged"),
    ("            securityContext: {allowPrivilegeEscalation: true}\n", "securityContext.allowPrivilegeEscalation"),
    ("            securityContext: {capabilities: {add: [SYS_ADMIN]}}\n", "securityContext.capabilities.add[0]"),
    ("            securityContext: {capabilities: {add: [IPC_LOCK]}}\n", "securityContext.capabilities.add[0]"),
    ("            securityContext: {capabilities: {drop: [ALL]}}\n", "securityContext.capabilities.drop"),
    ("            securityContext: {seccompProfile: {type: Unconfined}}\n", "securityContext.seccompProfile"),
    ("            securityContext: {runAsUser: -1}\n", "securityContext.runAsUser"),
    ("            securityContext: {runAsUser: '0'}\n", "securityContext.runAsUser"),
], ids=["privileged", "privilege escalation", "SYS_ADMIN", "IPC_LOCK (not in baseline)", "a drop list",
        "unconfined seccomp", "a negative user", "a string user"])
def test_everything_else_is_refused_at_its_field(security: str, field: str) -> None:
    with pytest.raises(ManifestErrors) as raised:
        engine_context(security)
    paths = [e.path for e in raised.value.errors]
    assert any(path.endswith(f"containers[0].{field}") for path in paths), paths
