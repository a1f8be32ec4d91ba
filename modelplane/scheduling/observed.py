"""Observed capacity: the fleet as its clusters report it, and the grace clock of clusters that are down.

In control-cluster mode the Pulumi layer reads each workload cluster's Nodes and ResourceSlices every
run (`pulumi/observe.py`) and hands them here as plain data. This module is pure: the caller passes
the clock (`now`, seconds since the epoch) and the previous outages (kept in the placement's state).

Rules, each one of the issue's:
- A pool's *usable* nodes are its Ready nodes (label `modelplane.ai/pool`) whose ResourceSlices publish
  at least as many devices of each DRA driver as one node of its class declares. A reachable cluster
  plans against `min(declared, usable)` for a fixed-size pool: a pool that lost nodes, or GPUs, takes
  fewer new replicas, and retain re-places the newest replicas that no longer fit (retain.py).
  An autoscaled pool (`maxNodeCount`) is left as declared: fewer nodes than its maximum is how it
  runs, and nothing tells a lost node from one not yet added.
- A cluster is *down* when it cannot be reached, or when it declares nodes and none of them is Ready.
  `outages` keeps, per down cluster, when it was first seen down; a cluster seen up is dropped, so a
  flap restarts its clock.
- Down for less than its `outageGracePeriodSeconds`: planned as declared, so a flap moves nothing
  (and a new replica may still be placed there: the next run's apply waits for the cluster).
  Down for at least that long: a NoExecute taint, so retain drops its
  replicas and fill places them elsewhere in the same run; the old ones are removed after the new
  ones are applied (make-before-break, as Pulumi deletes last). When the cluster comes back, its
  taint goes and the moved replicas stay where they are: replicas never move to improve the
  picture (the Retain rule), so nothing moves back on its own.
- A cluster with no observation (its kubeconfig is not known when the program plans: a cluster
  the same run provisions), or reachable with no node carrying the pool label at all (nodes
  labelled otherwise), is planned as declared.
- Replicas re-placed off a cluster that cannot be reached are *stranded* (`stranded`): kept in the
  placement's state, their objects still registered unchanged on that cluster (deleting them there
  would fail every run), until the cluster answers; the run after that deletes them.
The taints are modelplane's own (`OUTAGE_TAINT`), added to a copy of the fleet: the user's objects
are never changed. A deployment that tolerates every taint (operator Exists, no key) tolerates these
too, as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from enum import StrEnum

from modelplane.api import Fleet, InferenceCluster, Taint
from modelplane.api.base import TaintEffect
from modelplane.api.fleet import NodePool
from modelplane.api.labels import POOL
from modelplane.scheduling.placement import Placement, Replica

OUTAGE_TAINT = "modelplane.ai/outage"


@dataclass(frozen=True)
class PoolObservation:
    nodes: int
    """Nodes carrying the pool's label."""
    usable: int
    """Of those, the Ready ones that publish every device of the pool's class."""


@dataclass(frozen=True)
class ClusterObservation:
    reachable: bool
    pools: Mapping[str, PoolObservation]
    """Per declared pool; a pool with no node at all is absent."""
    error: str = ""
    """Why the cluster could not be read, when it could not."""


class Health(StrEnum):
    UP = "Up"
    DOWN = "Down"
    """Down within its grace period: planned as declared, its replicas stay."""
    EXPIRED = "Expired"
    """Down past its grace period: its replicas are re-placed elsewhere."""
    UNOBSERVED = "Unobserved"


@dataclass(frozen=True)
class PoolCapacity:
    cluster: str
    pool: str
    declared: int
    observed: int | None
    """Usable nodes seen; None when the cluster was not read."""
    planned: int
    """What the placement plans against."""


@dataclass(frozen=True)
class ClusterHealth:
    cluster: str
    health: Health
    why: str
    """For people: unreachable, or no Ready node, and since when; empty when up."""
    down_since: int | None = None


@dataclass(frozen=True)
class Observed:
    fleet: Fleet
    """The fleet to plan against: pools lowered to what is usable, down clusters tainted."""
    pools: tuple[PoolCapacity, ...]
    clusters: tuple[ClusterHealth, ...]
    outages: Mapping[str, int]
    """Cluster -> when it was first seen down (epoch seconds), to keep in state for the next run."""


def down(cluster: InferenceCluster, seen: ClusterObservation) -> bool:
    """Unreachable, or every node of its pools NotReady while it declares some."""
    if not seen.reachable:
        return True
    declared = sum(pool.node_count for pool in cluster.spec.node_pools)
    ready = sum(pool.usable for pool in seen.pools.values())
    nodes = sum(pool.nodes for pool in seen.pools.values())
    return declared > 0 and nodes > 0 and ready == 0


def outages(fleet: Fleet, observations: Mapping[str, ClusterObservation], previous: Mapping[str, int],
            now: int) -> dict[str, int]:
    """Each down cluster with when it was first seen down: `previous`'s time if it was down then too."""
    out: dict[str, int] = {}
    for cluster in fleet.clusters:
        seen = observations.get(cluster.name)
        if seen is not None and down(cluster, seen):
            out[cluster.name] = previous.get(cluster.name, now)
    return out


def observe(fleet: Fleet, observations: Mapping[str, ClusterObservation], previous: Mapping[str, int],
            now: int) -> Observed:
    """The fleet to plan against now, what each pool planned against, and the outages to keep."""
    since = outages(fleet, observations, previous, now)
    clusters: list[InferenceCluster] = []
    pools: list[PoolCapacity] = []
    health: list[ClusterHealth] = []
    for cluster in fleet.clusters:
        seen = observations.get(cluster.name)
        state, why = _health(cluster, seen, since.get(cluster.name), now)
        health.append(ClusterHealth(cluster.name, state, why, since.get(cluster.name)))
        node_pools = tuple(_planned(pool, seen) if state is Health.UP else pool for pool in cluster.spec.node_pools)
        pools += [PoolCapacity(cluster.name, declared.name, declared.node_count,
                               None if state is Health.UNOBSERVED else _usable(declared, seen), planned.node_count)
                  for declared, planned in zip(cluster.spec.node_pools, node_pools)]
        clusters.append(_with(cluster, node_pools, state))
    return Observed(Fleet(clusters=tuple(clusters), classes=fleet.classes, gateway=fleet.gateway),
                    tuple(pools), tuple(health), since)


def _health(cluster: InferenceCluster, seen: ClusterObservation | None, since: int | None,
            now: int) -> tuple[Health, str]:
    if seen is None:
        return Health.UNOBSERVED, "not read this run (no kubeconfig known when planning): planned as declared"
    if since is None and seen.reachable and not seen.pools:
        return Health.UNOBSERVED, f"no node carries the {POOL} label: planned as declared"
    if since is None:
        return Health.UP, ""
    what = f"unreachable ({seen.error})" if not seen.reachable else "no node of its pools is Ready"
    grace = cluster.spec.outage_grace_period_seconds
    # No elapsed time in the words (`downSince` has when): status is written only when it changes.
    if now - since >= grace:
        return Health.EXPIRED, f"{what}, past its grace period of {grace}s: its replicas are re-placed on other clusters"
    return Health.DOWN, f"{what}, within its grace period of {grace}s: its replicas stay"


def _usable(pool: NodePool, seen: ClusterObservation | None) -> int | None:
    if seen is None or not seen.reachable:
        return None
    observed = seen.pools.get(pool.name)
    return observed.usable if observed is not None else 0


def _planned(pool: NodePool, seen: ClusterObservation | None) -> NodePool:
    usable = _usable(pool, seen)
    if usable is None or pool.max_node_count is not None or usable >= pool.node_count:
        return pool
    low = pool.min_node_count if pool.min_node_count is None else min(pool.min_node_count, usable)
    return pool.model_copy(update={"node_count": usable, "min_node_count": low})


def _with(cluster: InferenceCluster, pools: tuple[NodePool, ...], state: Health) -> InferenceCluster:
    taints = cluster.spec.taints
    if state is Health.EXPIRED:
        taints = (*taints, Taint(key=OUTAGE_TAINT, value=None, effect=TaintEffect.NO_EXECUTE))
    if pools == cluster.spec.node_pools and taints == cluster.spec.taints:
        return cluster
    return cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"node_pools": pools, "taints": taints})})


@dataclass(frozen=True)
class Move:
    deployment: str
    index: int
    """The replica's index on the cluster it left."""
    source: str
    target: str | None
    """Where the deployment gained a replica this run; None when it found no room."""
    why: str


def moves(previous: Placement | None, placement: Placement, observed: Observed) -> tuple[Move, ...]:
    """The replicas that left a cluster down past its grace period, and why, for status."""
    if previous is None:
        return ()
    expired = {h.cluster: h.why for h in observed.clusters if h.health is Health.EXPIRED}
    now = {r.slot for r in placement.replicas}
    before = {r.slot for r in previous.replicas}
    gained: dict[str, list[str]] = {}
    for deployment, cluster, _ in sorted(now - before):
        gained.setdefault(deployment, []).append(cluster)
    out = []
    for deployment, cluster, index in sorted(before - now):
        if cluster in expired:
            targets = gained.get(deployment, [])
            out.append(Move(deployment, index, cluster, targets.pop(0) if targets else None,
                            f"cluster {cluster} is {expired[cluster]}"))
    return tuple(out)


def observations_to_json(observations: Mapping[str, ClusterObservation]) -> dict[str, Any]:
    """Plain data for the placement's inputs (sorted, so equal observations are equal inputs)."""
    return {name: {"reachable": seen.reachable, "error": seen.error,
                   "pools": {pool: {"nodes": p.nodes, "usable": p.usable} for pool, p in sorted(seen.pools.items())}}
            for name, seen in sorted(observations.items())}


def observations_from_json(data: Mapping[str, Any]) -> dict[str, ClusterObservation]:
    """The inverse of `observations_to_json`; a malformed entry raises ValueError with its path."""
    out = {}
    for name, seen in data.items():
        try:
            pools = {pool: PoolObservation(int(p["nodes"]), int(p["usable"])) for pool, p in seen["pools"].items()}
            out[name] = ClusterObservation(bool(seen["reachable"]), pools, str(seen.get("error", "")))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"observed.{name}: not an observation ({error!r})") from None
    return out


def report(observed: Observed, moved: tuple[Move, ...], carried: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Declared and observed capacity per pool, each cluster's health, and why replicas moved, as plain data.
    `carried`: the previous report's moves; one is kept while the cluster it left is still not Up (so status
    keeps saying why a replica is elsewhere for as long as the reason lasts), after this run's moves."""
    up = {h.cluster for h in observed.clusters if h.health in (Health.UP, Health.UNOBSERVED)}
    new = [{"deployment": m.deployment, "index": m.index, "from": m.source, "to": m.target, "why": m.why}
           for m in moved]
    slots = {(m["deployment"], m["from"], m["index"]) for m in new}
    kept = [dict(m) for m in carried if m.get("from") not in up and (m.get("deployment"), m.get("from"),
                                                                         m.get("index")) not in slots]
    return {"pools": [{"cluster": p.cluster, "pool": p.pool, "declared": p.declared, "observed": p.observed,
                       "planned": p.planned} for p in observed.pools],
            "clusters": [{"cluster": h.cluster, "health": str(h.health), "why": h.why, "downSince": h.down_since}
                         for h in observed.clusters],
            "moves": new + kept}


def stranded(kept: Sequence[Replica], previous: Placement | None, placement: Placement,
             observations: Mapping[str, ClusterObservation]) -> tuple[Replica, ...]:
    """The replicas no longer placed whose cluster cannot be reached now: those kept from the last run
    (`kept`) and those the previous placement had. Their objects stay registered as they were, so the
    run asks nothing of a cluster that cannot answer (a delete there would fail it); once the cluster is
    reachable again they are dropped, and their objects are deleted like any replica's. Sorted by slot."""
    unreachable = {name for name, seen in observations.items() if not seen.reachable}
    live = {replica.slot for replica in placement.replicas}
    found = {replica.slot: replica for replica in (*kept, *(previous.replicas if previous else ()))
             if replica.cluster in unreachable and replica.slot not in live}
    return tuple(found[slot] for slot in sorted(found))
