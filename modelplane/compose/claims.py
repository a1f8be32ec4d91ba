"""DRA ResourceClaimTemplates: the devices a member's pods claim, as the placement resolved them.

Invariants:
- One `resource.k8s.io/v1` ResourceClaimTemplate per member whose placement carries requests; a
  member that claims nothing (a coordinator-only leader, or one matched only by Synthetic devices)
  gets no template and its pods no claim.
- Each request is `{name, exactly: {deviceClassName, count, selectors}}` with the user's CEL
  expressions verbatim, in the order the user wrote them.
"""

from __future__ import annotations

from modelplane.api import Role
from modelplane.compose import names
from modelplane.compose.replica import ReplicaContext
from modelplane.scheduling import MemberPlacement

POD_CLAIM = "devices"
"""The name under which a pod (and its engine container) refers to its claim."""


def template_name(workload: str, role: Role) -> str:
    return names.name(workload, role.lower())


def claim_template(ctx: ReplicaContext, workload: str, role: Role, placement: MemberPlacement) -> dict | None:
    """The member's ResourceClaimTemplate, or None when the member claims no device."""
    if not placement.requests:
        return None
    requests = [{"name": request.name,
                 "exactly": {"deviceClassName": request.device_class_name, "allocationMode": "ExactCount",
                             "count": request.count,
                             "selectors": [{"cel": {"expression": cel}} for cel in request.selectors]}}
                for request in placement.requests]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": ctx.metadata(template_name(workload, role)),
            "spec": {"metadata": {"labels": ctx.labels()}, "spec": {"devices": {"requests": requests}}}}
