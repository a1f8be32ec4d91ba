"""Why a replica cannot go somewhere: reasons as data, in the style of the Kubernetes scheduler.

A `Reason` has a stable `code`, a `phrase` that reads after "N cluster(s)" or "N pool(s)"
(`had untolerated taint {dedicated=frontier:NoSchedule}`), where it applies (cluster, and pool for
pool-level reasons), the detail `explain` prints (the failing selector and the value it read) and
a hint (what would make it fit). Only `explanation.py` turns reasons into sentences.

`stage` orders reasons by how far a candidate got (labels < taints < devices < capacity), which is
how the closest near-miss is chosen.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Code(StrEnum):
    CLUSTER_LABELS = "ClusterLabelsMismatch"
    CACHE_NOT_STAGED = "CacheNotStaged"
    UNTOLERATED_TAINT = "UntoleratedTaint"
    NO_MATCHING_DEVICE = "NoMatchingDevice"
    DEVICE_COUNT = "DeviceCountTooHigh"
    ONLY_SYNTHETIC = "OnlySyntheticDevices"
    FABRIC_MISMATCH = "FabricMismatch"
    NO_POOL_FOR_MEMBER = "NoPoolForMember"
    INSUFFICIENT_NODES = "InsufficientNodes"


_STAGE = {
    Code.CLUSTER_LABELS: 0,
    Code.CACHE_NOT_STAGED: 0,
    Code.UNTOLERATED_TAINT: 1,
    Code.NO_MATCHING_DEVICE: 2,
    Code.DEVICE_COUNT: 3,
    Code.ONLY_SYNTHETIC: 3,
    Code.FABRIC_MISMATCH: 3,
    Code.NO_POOL_FOR_MEMBER: 3,
    Code.INSUFFICIENT_NODES: 4,
}


def stage(code: Code) -> int:
    """How far a candidate with this reason got: labels 0, taints 1, devices 2 and 3, capacity 4."""
    return _STAGE[code]


class Reason(NamedTuple):
    """A tuple, not a dataclass: explain builds one per (deployment, pool) that cannot host a
    replica, so construction must be cheap."""

    code: Code
    phrase: str
    cluster: str
    pool: str | None = None
    detail: str = ""
    hint: str = ""
    shortfall: int = 0
    """For capacity: how many more free nodes would make it fit (ranks near-misses)."""
    engine: str | None = None
    """The engine it is about, set only where `explain` names it (a deployment of several engines)."""

    @property
    def stage(self) -> int:
        return stage(self.code)

    @property
    def scope(self) -> str:
        return "pool(s)" if self.pool is not None else "cluster(s)"

    @property
    def where(self) -> str:
        return f"{self.cluster}/{self.pool}" if self.pool is not None else self.cluster
