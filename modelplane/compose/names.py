"""Names and labels of everything Modelplane composes.

Invariants:
- Every name is a DNS-1123 label of at most `limit` (63 unless a caller needs less) characters,
  built from readable parts joined by '-' (`<deployment>-<cluster>-<index>` style).
- Names are deterministic: the same parts always give the same name. A short hash of the full,
  untruncated name is appended only when truncation is needed, so two long names that share a
  prefix still differ.
- Labels: every object carries `app.kubernetes.io/managed-by: modelplane`; objects of a replica
  also carry its deployment, cluster and replica index (`replica_labels`); a ModelService's route on
  a workload cluster carries the service and the cluster.
"""

from __future__ import annotations

import hashlib
import re

from modelplane.api.labels import (  # the label keys are the API's: users may not set them
    CACHE,
    CLUSTER,
    COMPONENT,
    DEPLOYMENT,
    ENGINE,
    POOL,
    REPLICA_INDEX,
    ROLE,
    SERVICE,
    SERVING,
)

MANAGED_BY = "app.kubernetes.io/managed-by"
MODELPLANE = "modelplane"

MAX_NAME = 63
_HASH = 8
_INVALID = re.compile(r"[^a-z0-9-]+")


def name(*parts: str, limit: int = MAX_NAME) -> str:
    """`parts` joined by '-' as a DNS-1123 label of at most `limit` characters."""
    full = _INVALID.sub("-", "-".join(parts).lower()).strip("-")
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH]
    return f"{full[:limit - _HASH - 1].rstrip('-')}-{digest}"


def managed() -> dict[str, str]:
    return {MANAGED_BY: MODELPLANE}


def replica_labels(deployment: str, cluster: str, index: int) -> dict[str, str]:
    """The labels of every object of one replica (and of its ModelEndpoint)."""
    return {**managed(), DEPLOYMENT: deployment, CLUSTER: cluster, REPLICA_INDEX: str(index)}
