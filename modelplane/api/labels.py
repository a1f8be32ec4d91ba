"""The `modelplane.ai/` label keys Modelplane sets itself, and so reserves on users' objects.

These are the only reserved keys: any other key under `modelplane.ai/` (`modelplane.ai/region` on
a cluster, `modelplane.ai/external-provider` on a ModelEndpoint, as the Crossplane-based
Modelplane's own examples write them) is the user's and is kept on the object. A user label with a
reserved key would clash with the value Modelplane sets, so the loader rejects it. compose names
its labels from here, so the list cannot drift from what is set.
"""

from __future__ import annotations

DEPLOYMENT = "modelplane.ai/deployment"
"""The ModelDeployment an object or ModelEndpoint belongs to (what a ModelService selects replicas by)."""
CLUSTER = "modelplane.ai/cluster"
"""The cluster a replica, cache volume or ModelService route is on."""
REPLICA_INDEX = "modelplane.ai/replica-index"
"""The replica's index on its cluster."""
ENGINE = "modelplane.ai/engine"
"""The engine a workload and its pods run."""
ROLE = "modelplane.ai/role"
"""A pod's member role: standalone, leader or worker."""
SERVING = "modelplane.ai/serving"
"""`true` on pods that serve requests (what Services and InferencePools select)."""
CACHE = "modelplane.ai/cache"
"""The ModelCache a volume or download Job stages."""
POOL = "modelplane.ai/pool"
"""A GPU node's pool (the cluster components label nodes; pods are pinned to their pool by it)."""
GPU = "modelplane.ai/gpu"
"""A GPU node's accelerator type (the cluster components label nodes with it)."""
COMPONENT = "modelplane.ai/component"
"""Which of Modelplane's own workloads a pod is (the endpoint picker)."""
SERVICE = "modelplane.ai/service"
"""The ModelService a route on a workload cluster serves."""

RESERVED = frozenset({DEPLOYMENT, CLUSTER, REPLICA_INDEX, ENGINE, ROLE, SERVING, CACHE, POOL, GPU, COMPONENT, SERVICE})
