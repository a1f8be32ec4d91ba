"""What changes between two placements: replicas created, moved or removed, pools and deployments.

`diff(before, after, fleet_before, fleet_after)` compares two placement documents, the one a
previous `plan` (or the stack's state) holds and a new one, or a plan before and after a what-if
edit. Pure and deterministic; every list is sorted.

- A replica's identity is (deployment, cluster, index). A slot present on both sides is
  `unchanged` when every member stays on its pool, else `moved` (re-placed on the same cluster).
- Per deployment, slots only in `before` and slots only in `after` are paired in slot order as
  `moved` (a replica that had to leave and was placed elsewhere); what is left over is `removed`
  (scale-down, a deleted deployment) or `created`.
- Pools are compared by nodes used (whole nodes plus what shared pods need); a pool absent from a
  fleet has capacity None.

`outline(placement)` is one placement in the shape a generic structural diff (the Pulumi engine's
`preview --diff`) reads as these same replica changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any, NamedTuple

from modelplane.api import Fleet
from modelplane.api.base import Role
from modelplane.invariants import InvariantError
from modelplane.scheduling.ledger import PoolKey
from modelplane.scheduling.placement import MemberPlacement, Placement, Replica, pool_need


class Change(StrEnum):
    CREATE = "create"
    MOVE = "move"
    REMOVE = "remove"
    UNCHANGED = "unchanged"


class ReplicaChange(NamedTuple):
    """A tuple, not a dataclass: a diff holds one per replica of either side."""

    change: Change
    deployment: str
    before: Replica | None
    after: Replica | None

    @property
    def sort_key(self) -> tuple[str, str, int]:
        replica = self.after or self.before
        if replica is None:
            raise InvariantError(f"a change of {self.deployment} has a replica before or after it")
        return self.deployment, replica.cluster, replica.index


@dataclass(frozen=True)
class PoolChange:
    cluster: str
    pool: str
    used: tuple[int, int]
    """Nodes used before, after."""
    capacity: tuple[int | None, int | None]
    """Capacity before, after; None where the pool does not exist."""

    @property
    def free(self) -> tuple[int | None, int | None]:
        return tuple(None if cap is None else cap - used  # type: ignore[return-value]
                     for used, cap in zip(self.used, self.capacity))


@dataclass(frozen=True)
class DeploymentChange:
    deployment: str
    scheduled: tuple[int, int]
    desired: tuple[int, int]
    short: tuple[bool, bool]
    reasons: tuple[str, ...]
    """Why it is short after, when it is."""

    @property
    def became_short(self) -> bool:
        return self.short[1] and (not self.short[0] or self.scheduled[1] < self.scheduled[0])


@dataclass(frozen=True)
class PlacementDiff:
    replicas: tuple[ReplicaChange, ...]
    """Every replica of either side, unchanged ones included, by (deployment, cluster, index)."""
    pools: tuple[PoolChange, ...]
    """Pools whose used nodes or capacity change, by cluster then pool."""
    deployments: tuple[DeploymentChange, ...]
    """Deployments with a replica change or whose scheduled or desired count changes, by namespace/name."""

    @cached_property
    def by_deployment(self) -> dict[str, tuple[ReplicaChange, ...]]:
        """Every replica change (unchanged included) by deployment, in slot order."""
        grouped: dict[str, list[ReplicaChange]] = {}
        for change in self.replicas:
            grouped.setdefault(change.deployment, []).append(change)
        return {key: tuple(changes) for key, changes in grouped.items()}

    def of(self, change: Change) -> tuple[ReplicaChange, ...]:
        return tuple(r for r in self.replicas if r.change is change)

    @property
    def changed(self) -> tuple[ReplicaChange, ...]:
        return tuple(r for r in self.replicas if r.change is not Change.UNCHANGED)

    @property
    def empty(self) -> bool:
        return not self.changed and not self.pools and not self.deployments

    def summary(self) -> str:
        """`N to create, M to move, K to remove`, or `no placement changes`."""
        if not self.changed:
            return "no placement changes"
        return (f"{len(self.of(Change.CREATE))} to create, {len(self.of(Change.MOVE))} to move, "
                f"{len(self.of(Change.REMOVE))} to remove")

    def to_json(self) -> list[dict[str, Any]]:
        """Replica changes, then pools, then deployments; unchanged replicas are left out."""
        out: list[dict[str, Any]] = []
        for replica in self.changed:
            entry: dict[str, Any] = {"change": str(replica.change), "deployment": replica.deployment}
            if replica.before is not None:
                entry["from"] = _slot_json(replica.before)
            if replica.after is not None:
                entry["to"] = _slot_json(replica.after)
            out.append(entry)
        out += [{"change": "pool", "cluster": p.cluster, "pool": p.pool, "used": list(p.used),
                 "capacity": list(p.capacity)} for p in self.pools]
        out += [{"change": "deployment", "deployment": d.deployment, "scheduled": list(d.scheduled),
                 "desired": list(d.desired), "reasons": list(d.reasons)} for d in self.deployments]
        return out


def diff(before: Placement, after: Placement, fleet_before: Fleet, fleet_after: Fleet) -> PlacementDiff:
    replicas = _replica_changes(before, after)
    moved = {r.deployment for r in replicas if r.change is not Change.UNCHANGED}
    return PlacementDiff(replicas, _pool_changes(before, after, fleet_before, fleet_after),
                         _deployment_changes(before, after, moved))


def outline(placement: Placement) -> dict[str, dict[str, Any]]:
    """Each deployment as `{"scheduled": "3/3", "replicas": {"east#0": "chat: h100", ...}}`.

    A replica's slot (`cluster#index`) is its key and where its members run its value, compared as
    `diff` compares slots: a created replica is an added key, a removed one a deleted key, a replica
    re-placed on its cluster a changed value, and an unchanged replica an equal value. The value
    lists engines by name, each with its Standalone member's pool (`chat: h100`) or every member's
    role and pool (`coder: Leader=h100 Worker=h200`), so a placement outlines the same whatever order
    its maps came back in.
    """
    replicas: dict[str, dict[str, str]] = {key: {} for key in placement.deployments}
    for replica in placement.replicas:
        engines = ", ".join(f"{engine}: {_members_text(pools)}" for engine, pools in sorted(_pools_of(replica).items()))
        replicas.setdefault(replica.deployment, {})[f"{replica.cluster}#{replica.index}"] = engines
    return {key: {"scheduled": f"{status.scheduled}/{status.desired}", "replicas": replicas[key]}
            for key, status in placement.deployments.items()}


def pool_use(placement: Placement) -> dict[PoolKey, int]:
    """Nodes used per (cluster, pool) by the placement's replicas (`pool_need`: whole nodes plus
    what the shared pods need)."""
    return {key: pool_need(members) for key, members in pool_members(placement).items()}


def pool_devices(placement: Placement) -> dict[PoolKey, dict[str, int]]:
    """Devices claimed per (cluster, pool) and kind: every pod's, whole-node or shared."""
    found: dict[PoolKey, dict[str, int]] = {}
    for key, members in pool_members(placement).items():
        claimed = found.setdefault(key, {})
        for member in members:
            for use in member.devices:
                claimed[use.device] = claimed.get(use.device, 0) + use.count * (member.nodes + member.shared_pods)
    return found


def pool_members(placement: Placement) -> dict[PoolKey, list[MemberPlacement]]:
    """The members on each (cluster, pool), in replica order."""
    found: dict[PoolKey, list[MemberPlacement]] = {}
    for replica in placement.replicas:
        for member in replica.members():
            found.setdefault((replica.cluster, member.pool), []).append(member)
    return found


def pool_capacity(fleet: Fleet) -> dict[PoolKey, int]:
    return {(c.name, p.name): p.capacity for c in fleet.clusters for p in c.spec.node_pools}


def _replica_changes(before: Placement, after: Placement) -> tuple[ReplicaChange, ...]:
    old = {r.slot: r for r in before.replicas}
    new = {r.slot: r for r in after.replicas}
    changes: list[ReplicaChange] = []
    for slot in sorted(old.keys() & new.keys()):
        same = _same_pools(old[slot], new[slot])
        changes.append(ReplicaChange(Change.UNCHANGED if same else Change.MOVE, slot[0], old[slot], new[slot]))
    for deployment in sorted({slot[0] for slot in old.keys() ^ new.keys()}):
        gone = [old[s] for s in sorted(old.keys() - new.keys()) if s[0] == deployment]
        came = [new[s] for s in sorted(new.keys() - old.keys()) if s[0] == deployment]
        changes += [ReplicaChange(Change.MOVE, deployment, g, c) for g, c in zip(gone, came)]
        changes += [ReplicaChange(Change.REMOVE, deployment, g, None) for g in gone[len(came):]]
        changes += [ReplicaChange(Change.CREATE, deployment, None, c) for c in came[len(gone):]]
    return tuple(sorted(changes, key=lambda c: c.sort_key))


def _same_pools(before: Replica, after: Replica) -> bool:
    """Whether every member of every engine runs on the same pool (`_pools_of` equal, without building it)."""
    if before.engines.keys() != after.engines.keys():
        return False
    for engine, members in before.engines.items():
        now = after.engines[engine]
        if members.keys() != now.keys() or any(member.pool != now[role].pool for role, member in members.items()):
            return False
    return True


def _pools_of(replica: Replica) -> dict[str, dict[str, str]]:
    return {engine: {str(role): member.pool for role, member in members.items()}
            for engine, members in replica.engines.items()}


def _pool_changes(before: Placement, after: Placement, fleet_before: Fleet, fleet_after: Fleet) -> tuple[PoolChange, ...]:
    used = pool_use(before), pool_use(after)
    capacity = pool_capacity(fleet_before), pool_capacity(fleet_after)
    changes = []
    for key in sorted(used[0].keys() | used[1].keys() | capacity[0].keys() | capacity[1].keys()):
        change = PoolChange(*key, used=(used[0].get(key, 0), used[1].get(key, 0)),
                            capacity=(capacity[0].get(key), capacity[1].get(key)))
        if change.used[0] != change.used[1] or change.capacity[0] != change.capacity[1]:
            changes.append(change)
    return tuple(changes)


def _deployment_changes(before: Placement, after: Placement, moved: set[str]) -> tuple[DeploymentChange, ...]:
    changes = []
    for key in sorted(before.deployments.keys() | after.deployments.keys()):
        old, new = before.deployments.get(key), after.deployments.get(key)
        scheduled = (old.scheduled if old else 0, new.scheduled if new else 0)
        desired = (old.desired if old else 0, new.desired if new else 0)
        if key in moved or scheduled[0] != scheduled[1] or desired[0] != desired[1]:
            changes.append(DeploymentChange(key, scheduled, desired, (bool(old and old.short), bool(new and new.short)),
                                            new.reasons if new else ()))
    return tuple(changes)


def _members_text(pools: dict[str, str]) -> str:
    if list(pools) == [Role.STANDALONE]:
        return pools[Role.STANDALONE]
    return " ".join(f"{role}={pool}" for role, pool in sorted(pools.items()))


def _slot_json(replica: Replica) -> dict[str, Any]:
    return {"cluster": replica.cluster, "index": replica.index,
            "engines": {engine: dict(sorted(pools.items())) for engine, pools in sorted(_pools_of(replica).items())}}
