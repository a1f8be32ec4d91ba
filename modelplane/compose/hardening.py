"""Pod hardening (issue 23): what every pod and namespace Modelplane renders carries by default.

- `ENGINE_CONTAINER`: every setting of the Pod Security "restricted" profile that does not change
  the user id (an engine image may expect its own user, root included): no privilege escalation,
  every capability dropped, the runtime's default seccomp profile. `ENGINE_POD` adds the pod's
  seccomp profile and no ServiceAccount token (an engine never calls the Kubernetes API).
- `RESTRICTED_CONTAINER` / `RESTRICTED_POD`: the whole "restricted" profile for Modelplane's own
  pods (the EPP, the routing sidecar, the download Job): also non-root, as user and group 65532.
- `NAMESPACE_LABELS`: Pod Security admission on every namespace Modelplane renders: enforce
  `baseline` (engines may run as their image's user), warn and audit at `restricted`.
Pure constants; compose copies them (`dict(...)`/`hardened(...)`) so no rendered object shares one.
"""

from __future__ import annotations

import copy
from typing import Any

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
