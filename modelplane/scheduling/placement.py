"""The placement document: where every replica runs, and how far each deployment got.

This is the one format shared by `modelplane plan --format json`, `plan --state FILE` and the
Pulumi Placement resource's state, so the CLI replays stickiness exactly as the program does:

    {"version": 1,
     "replicas": [{"deployment": "ml-team/qwen3-8b", "cluster": "gke-a", "index": 0,
                   "engines": {"qwen3-8b": {"Standalone": {"pool": "l4", "nodes": 1,
                       "requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1,
                                     "selectors": ["device.capacity[...]..."]}]}}}}],
     "deployments": {"ml-team/qwen3-8b": {"desired": 1, "scheduled": 1, "reasons": []}}}

`nodes` is the member's node cost (pods x copies; 0 for a member that claims no DRA device);
`requests` are the DRA requests the member's ResourceClaimTemplate carries (synthetic matches are
never claimed). Replicas are sorted by (deployment, cluster, index) and maps by key, so the same
placement always serializes to the same bytes.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from modelplane.api.base import Role

PLACEMENT_VERSION = 1


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class ResolvedRequest(_Doc):
    """A DRA device request as the member's claim carries it: the user's CEL, verbatim."""

    name: str
    device_class_name: str = Field(alias="deviceClassName")
    count: Annotated[int, Field(ge=1)]
    selectors: tuple[str, ...]


class MemberPlacement(_Doc):
    pool: str
    nodes: Annotated[int, Field(ge=0)]
    requests: tuple[ResolvedRequest, ...] = ()


class Replica(_Doc):
    deployment: str
    """`namespace/name` of the ModelDeployment."""
    cluster: str
    index: Annotated[int, Field(ge=0)]
    """The replica's index within its cluster: (deployment, cluster, index) is its identity."""
    engines: dict[str, dict[Role, MemberPlacement]]
    """Per engine name, per member role: where the member runs and what it claims."""

    @property
    def slot(self) -> tuple[str, str, int]:
        return self.deployment, self.cluster, self.index

    def pools(self) -> dict[str, int]:
        """Nodes this replica holds per pool of its cluster."""
        used: dict[str, int] = {}
        for members in self.engines.values():
            for member in members.values():
                used[member.pool] = used.get(member.pool, 0) + member.nodes
        return used


class DeploymentStatus(_Doc):
    desired: Annotated[int, Field(ge=0)]
    scheduled: Annotated[int, Field(ge=0)]
    reasons: tuple[str, ...] = ()

    @property
    def short(self) -> bool:
        return self.scheduled < self.desired


class Placement(_Doc):
    version: int = PLACEMENT_VERSION
    replicas: tuple[Replica, ...] = ()
    deployments: dict[str, DeploymentStatus] = Field(default_factory=dict)

    def replicas_of(self, deployment: str) -> tuple[Replica, ...]:
        return tuple(replica for replica in self.replicas if replica.deployment == deployment)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_json(cls, data: Any) -> Placement:
        """Read a placement document; raise StateError (with every problem) if it is not one. The
        `changes` that `plan --state --format json` prints beside the document are not part of it."""
        if isinstance(data, dict) and "changes" in data:
            data = {key: value for key, value in data.items() if key != "changes"}
        try:
            placement = cls.model_validate(data)
        except ValidationError as error:
            raise StateError([f"{_loc(e['loc'])}: {e['msg']}" for e in error.errors()]) from None
        if placement.version != PLACEMENT_VERSION:
            raise StateError([f"version: this is placement version {placement.version}; "
                              f"Modelplane reads version {PLACEMENT_VERSION}"])
        counts = Counter(replica.slot for replica in placement.replicas)
        duplicates = sorted(slot for slot, count in counts.items() if count > 1)
        if duplicates:
            raise StateError([f"replicas: {d}/{c}/{i} appears more than once" for d, c, i in duplicates])
        return placement


class StateError(ValueError):
    """A previous placement that cannot be read; `problems` says where and why."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(document)"
