"""The fleet scheduler: which cluster and pool every replica runs on, and why.

`place(fleet, workloads, previous)` is pure and deterministic (see `scheduler.py` for its invariants);
`explain(...)` says why a deployment is placed as it is. The `Placement` document is what
`modelplane plan --format json` prints, `--state` reads back and the Pulumi Placement resource keeps.
"""

from modelplane.scheduling.explanation import Brief, ClusterVerdict, Explanation
from modelplane.scheduling.scheduler import explain, place, plan
from modelplane.scheduling.placement import (
    DeploymentStatus,
    MemberPlacement,
    Placement,
    Replica,
    ResolvedRequest,
    StateError,
)
from modelplane.scheduling.reasons import Code, Reason

__all__ = [
    "Brief", "ClusterVerdict", "Code", "DeploymentStatus", "Explanation", "MemberPlacement", "Placement", "Reason",
    "Replica", "ResolvedRequest", "StateError", "explain", "place", "plan",
]
