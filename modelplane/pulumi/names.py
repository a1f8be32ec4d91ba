"""Pulumi resource names: one helper for every per-cluster name, so a move is a create plus a delete.

Invariants:
- Every resource that belongs to a workload cluster has a logical name that starts with the
  cluster's name (`cluster_name(cluster, ...)`). A replica that moves from cluster A to cluster B
  therefore changes its resources' URNs: `pulumi preview` shows creates on B and deletes on A, and
  Pulumi creates before it deletes.
- Names are pure functions of manifest data (cluster, kind, namespace, name), never of Outputs, so
  they are known at preview and stable across runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def cluster_name(cluster: str, *parts: str) -> str:
    """`cluster-part-part`: the logical name of anything that belongs to one workload cluster."""
    return "-".join((cluster, *parts))


def manifest_name(cluster: str, manifest: Mapping[str, Any]) -> str:
    """The logical name of a rendered Kubernetes object on `cluster`: cluster, kind, namespace, name.

    Kind is part of the name because two kinds may share an object name (a Service and the
    Deployment behind it); cluster-scoped objects leave the namespace out.
    """
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    parts = (manifest["kind"].lower(), *((namespace,) if namespace else ()), metadata["name"])
    return cluster_name(cluster, *parts)


def provider_identifier(cluster: str) -> str:
    """The kubernetes Provider's `cluster_identifier`: the provider is replaced only when this changes,
    so an unknown kubeconfig at preview (a cluster being created) never replaces its workloads."""
    return f"modelplane-{cluster}"


def config_path(namespace: str, *parts: str) -> str:
    """A `pulumi config set --path` key: `ns:a.b.c`, with `["a.b"]` for a part that holds a dot."""
    return f"{namespace}:" + "".join(f'["{part}"]' if "." in part else f".{part}" for part in parts).lstrip(".")
