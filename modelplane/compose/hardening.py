"""Pod hardening (issue 23): what every pod and namespace Modelplane renders carries by default.

- `ENGINE_CONTAINER`: every setting of the Pod Security "restricted" profile that does not change
  the user id (an engine image may expect its own user, root included): no privilege escalation,
  every capability dropped, the runtime's default seccomp profile. `ENGINE_POD` adds the pod's
  seccomp profile and no ServiceAccount token (an engine never calls the Kubernetes API).
- `RESTRICTED_CONTAINER` / `RESTRICTED_POD`: the whole "restricted" profile for Modelplane's own
  pods (the EPP, the routing sidecar, the download Job): also non-root, as user and group 65532.
- `NAMESPACE_LABELS`: Pod Security admission on every namespace Modelplane renders: enforce
  `baseline` (engines may run as their image's user), warn and audit at `restricted`.
- `engine_context(container)`: `ENGINE_CONTAINER` with what the engine template's validated
  `securityContext` asks for: its user (`runAsUser: 0` is root, asked for explicitly) and group, and
  capabilities added back from Pod Security baseline's list. Nothing else can be loosened.
Pure constants; compose copies them (`dict(...)`/`hardened(...)`) so no rendered object shares one.
"""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api.workload import Container

ENGINE_CONTAINER: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "seccompProfile": {"type": "RuntimeDefault"}}
ENGINE_POD: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
NON_ROOT = 65532
RESTRICTED_CONTAINER: dict[str, Any] = {**ENGINE_CONTAINER, "runAsNonRoot": True}
RESTRICTED_POD: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": NON_ROOT, "runAsGroup": NON_ROOT,
                                  "fsGroup": NON_ROOT, "seccompProfile": {"type": "RuntimeDefault"}}
NAMESPACE_LABELS = {"pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/warn": "restricted",
                    "pod-security.kubernetes.io/audit": "restricted"}


def hardened(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of one of the securityContexts above, for one rendered object."""
    return copy.deepcopy(settings)


def engine_context(container: Container) -> dict[str, Any]:
    """The engine container's securityContext (see the module docstring)."""
    context = hardened(ENGINE_CONTAINER)
    asked = container.security_context
    if asked is None:
        return context
    if asked.run_as_user is not None:
        context["runAsUser"] = asked.run_as_user
    if asked.run_as_group is not None:
        context["runAsGroup"] = asked.run_as_group
    if asked.capabilities is not None:
        context["capabilities"]["add"] = [str(c) for c in asked.capabilities.add]
    return context
