"""Hardened pods by default (issue 23), checked on every pod template the examples render.

Expected values are the Pod Security Standards' "restricted" profile (kubernetes.io/docs/concepts/
security/pod-security-standards): allowPrivilegeEscalation false, capabilities drop ALL, seccomp
RuntimeDefault (or Localhost), runAsNonRoot true; engine pods keep the image's user.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.compose import render
from modelplane.scheduling import place

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def rendered(example: str) -> list[dict]:
    manifests = load([EXAMPLES / example])
    out = render(manifests, place(manifests.fleet, manifests.workloads))
    return [m for objects in out.clusters.values() for m in objects] + list(out.gateway)


def pod_specs(objects: list[dict]) -> Iterator[tuple[str, dict]]:
    for m in objects:
        spec = m.get("spec", {})
        if m["kind"] in ("Deployment", "Job"):
            yield f"{m['kind']} {m['metadata']['name']}", spec["template"]["spec"]
        elif m["kind"] == "LeaderWorkerSet":
            group = spec["leaderWorkerTemplate"]
            for part in ("leaderTemplate", "workerTemplate"):
                if part in group:
                    yield f"LeaderWorkerSet {m['metadata']['name']} {part}", group[part]["spec"]


def restricted_but_user(container: dict, pod: dict) -> list[str]:
    context = container.get("securityContext", {})
    seccomp = context.get("seccompProfile", pod.get("securityContext", {}).get("seccompProfile", {}))
    return [problem for problem, ok in (
        ("allowPrivilegeEscalation", context.get("allowPrivilegeEscalation") is False),
        ("capabilities", context.get("capabilities", {}).get("drop") == ["ALL"] and not context["capabilities"].get("add")),
        ("seccomp", seccomp.get("type") in ("RuntimeDefault", "Localhost")),
        ("privileged", not context.get("privileged")),
    ) if not ok]


EXAMPLE_DIRS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and any(p.glob("*.yaml")))


@pytest.mark.parametrize("example", EXAMPLE_DIRS)
def test_every_container_meets_restricted_but_for_the_user(example: str) -> None:
    specs = list(pod_specs(rendered(example)))
    assert specs
    for where, pod in specs:
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert restricted_but_user(container, pod) == [], (where, container["name"])


@pytest.mark.parametrize("example", EXAMPLE_DIRS)
def test_modelplanes_own_pods_are_restricted_and_engines_hold_no_token(example: str) -> None:
    for where, pod in pod_specs(rendered(example)):
        containers = {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}
        if "epp" in containers:
            assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0, where
        if "routing-sidecar" in containers:
            sidecar = containers["routing-sidecar"]["securityContext"]
            assert sidecar["runAsNonRoot"] is True and sidecar["runAsUser"] > 0, where
        if "engine" in containers or "download" in containers:
            assert pod["automountServiceAccountToken"] is False, where


@pytest.mark.parametrize("example", EXAMPLE_DIRS)
def test_every_rendered_namespace_has_pod_security_admission(example: str) -> None:
    namespaces = [m for m in rendered(example) if m["kind"] == "Namespace"]
    assert namespaces
    for namespace in namespaces:
        labels = namespace["metadata"]["labels"]
        assert (labels["pod-security.kubernetes.io/enforce"], labels["pod-security.kubernetes.io/warn"]) == (
            "baseline", "restricted"), namespace["metadata"]["name"]
