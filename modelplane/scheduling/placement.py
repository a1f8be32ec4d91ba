"""The placement document: where every replica runs, and how far each deployment got.

This is the one format shared by `modelplane plan --format json`, `plan --state FILE` and the
Pulumi Placement resource's state, so the CLI replays stickiness exactly as the program does:

    {"version": 1,
     "replicas": [{"deployment": "ml-team/qwen3-8b", "cluster": "gke-a", "index": 0,
                   "engines": {"qwen3-8b": {"Standalone": {"pool": "l4", "nodes": 1, "sharedPods": 0,
                       "devices": [{"device": "gpu", "count": 1, "perNode": 1}],
                       "requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1,
                                     "selectors": ["device.capacity[...]..."]}]}}}}],
     "deployments": {"ml-team/qwen3-8b": {"desired": 1, "scheduled": 1, "reasons": []}}}

`nodes` is the whole nodes the member holds (pods x copies when each pod keeps a node to itself;
0 when its pods share nodes or it claims no DRA device), `sharedPods` the pods that share nodes
(pods x copies, else 0), `devices` what each pod claims of each kind of device (`perNode`: how many
a node has), and `requests` the DRA requests the member's ResourceClaimTemplate carries (synthetic
matches are never claimed). `surge` (written only when true) says the member's pool keeps room for
a rollout's surge pod. A pool's used nodes are its whole nodes plus what its shared pods need
(`pool_need`, the ledger's rule), so the document alone says what every pool needs. Replicas are sorted by (deployment, cluster, index) and maps by key, so the same
placement always serializes to the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from modelplane.api.base import Role
from modelplane.scheduling.packing import need, surge_need

_set = object.__setattr__

PLACEMENT_VERSION = 1
"""The document's format."""
PLANNER_VERSION = 1
"""The placement rules' version, which the Pulumi Placement resource records in the document
(`planner`): a document written by another version is planned again, stickily. Raise it with every
change to what `place` keeps, charges or records."""


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @classmethod
    def trusted(cls, **fields: Any) -> Self:
        """`model_construct(**fields)` of the scheduler's own values (valid by construction) given
        as every field, by name, in declaration order: the same instance (its `__dict__`, every
        field set), without model_construct's per-field alias and default lookups (2.2 -> 0.6 us a
        member placement). On the varied 1,000 x 10,000 re-place, which builds 35,604 member
        placements and 29,837 replicas, retain took 1.20 instead of 1.33 CPU s (pinned, one run each)."""
        made = cls.__new__(cls)
        _set(made, "__dict__", fields)
        _set(made, "__pydantic_fields_set__", set(fields))
        _set(made, "__pydantic_extra__", None)
        _set(made, "__pydantic_private__", None)
        return made


class ResolvedRequest(_Doc):
    """A DRA device request as the member's claim carries it: the user's CEL, verbatim."""

    name: str
    device_class_name: str = Field(alias="deviceClassName")
    count: Annotated[int, Field(ge=1)]
    selectors: tuple[str, ...]


class DeviceUse(_Doc):
    """How many devices of one kind each pod of a member claims, of how many a node has."""

    device: str
    count: Annotated[int, Field(ge=1)]
    per_node: Annotated[int, Field(ge=1, alias="perNode")]


class MemberPlacement(_Doc):
    pool: str
    nodes: Annotated[int, Field(ge=0)]
    shared_pods: Annotated[int, Field(ge=0, alias="sharedPods")] = 0
    devices: tuple[DeviceUse, ...] = ()
    requests: tuple[ResolvedRequest, ...] = ()
    surge: bool = Field(default=False, exclude_if=lambda surge: not surge)
    """The member's pool keeps room for a rollout's surge pod (`zeroDowntimeRollouts`); written only when true."""

    @property
    def share(self) -> Decimal:
        """Nodes' worth the member holds: its whole nodes, and for each shared pod the largest
        fraction of a kind's devices it claims."""
        fraction = max((Decimal(use.count) / use.per_node for use in self.devices), default=Decimal(0))
        return self.nodes + self.shared_pods * fraction


def pool_need(members: Iterable[MemberPlacement]) -> int:
    """The nodes a pool's members need: their whole nodes plus what the shared pods need together,
    with room for a surge pod when the pool keeps it (the ledger's rule)."""
    whole, shared, per_node, surge = 0, [], {}, False
    for member in members:
        surge = surge or member.surge
        whole += member.nodes
        if member.shared_pods:
            shared.append(member)
            per_node.update((use.device, use.per_node) for use in member.devices)
    if not shared and not surge:
        return whole  # `need` of whole-node pods alone
    kinds = sorted(per_node)
    pods: dict[tuple[int, ...], int] = {}
    for member in shared:
        claimed = {use.device: use.count for use in member.devices}
        sizes = tuple(claimed.get(kind, 0) for kind in kinds)
        pods[sizes] = pods.get(sizes, 0) + member.shared_pods
    return (surge_need if surge else need)(tuple(per_node[kind] for kind in kinds), whole, pods)


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

    def pools(self) -> dict[str, Decimal]:
        """Nodes' worth this replica holds per pool of its cluster (`MemberPlacement.share`)."""
        used: dict[str, Decimal] = {}
        for member in self.members():
            used[member.pool] = used.get(member.pool, Decimal(0)) + member.share
        return used

    def members(self) -> Iterable[MemberPlacement]:
        for members in self.engines.values():
            yield from members.values()


class DeploymentStatus(_Doc):
    desired: Annotated[int, Field(ge=0)]
    scheduled: Annotated[int, Field(ge=0)]
    reasons: tuple[str, ...] = ()

    @property
    def short(self) -> bool:
        return self.scheduled < self.desired


class Placement(_Doc):
    version: int = PLACEMENT_VERSION
    planner: int | None = Field(default=None, exclude_if=lambda planner: planner is None)
    """The `PLANNER_VERSION` that wrote the document (the Pulumi Placement resource's; `plan` writes none)."""
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
