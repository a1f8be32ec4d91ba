"""Pulumi resource names: one encoding for every logical name, so no two resources ever share a URN.

A logical name is `COMPONENT:CLUSTER[:...]`: the name of the `Modelplane` component (or of the
component that owns the resource) first, then the cluster, then what the resource is. A rendered
Kubernetes object is `SCOPE:Kind:namespace/name` (`SCOPE:Kind:name` when cluster-scoped), where
SCOPE is `COMPONENT:CLUSTER` or the owning component's own name.

Invariants:
- Unambiguous: cluster, kind, namespace and object names are DNS labels, DNS subdomains or
  Kubernetes kinds (the loader and compose hold that), none of which holds `:` or `/`. Read from the
  right, a name therefore splits back into its parts in one way only; the component's name, first,
  may hold anything. `ml-team/x` and `ml/team-x` are `...:ml-team/x` and `...:ml/team-x`.
- Every child carries its component's name, so two `Modelplane` components (two fleets, staging
  and prod) coexist in one program.
- Every resource that belongs to a workload cluster has its cluster in its name. A replica that
  moves from cluster A to cluster B therefore changes its resources' URNs: `pulumi preview` shows
  creates on B and deletes on A, and Pulumi creates before it deletes.
- Names are pure functions of manifest data (component, cluster, kind, namespace, name), never of
  Outputs, so they are known at preview and stable across runs.
- Upgrades replace nothing: the names before this encoding (`legacy_*`: cluster, kind, namespace
  and name joined by `-`, no component) are each resource's `aliases`. Children named from their
  parent's name (`f"{name}-gke"`) follow their parent's alias without one of their own (the
  engine rewrites the prefix).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

SEPARATOR = ":"
"""Between the parts of a logical name; a namespace and a name are joined by `/`."""
SYSTEM_POOL = "system"
"""The suffix of the cloud components' own system node pool (`f"{name}-system"` on GKE, EKS, Nebius)."""


def scope(component: str, cluster: str) -> str:
    """`component:cluster`: the logical name of a cluster's component, and the prefix of everything on it."""
    return f"{component}{SEPARATOR}{cluster}"


def serving_name(component: str, cluster: str) -> str:
    """The logical name of a cluster's `ServingStack`."""
    return f"{scope(component, cluster)}{SEPARATOR}serving"


def provider_name(component: str, cluster: str) -> str:
    """The logical name of the kubernetes Provider `Modelplane` builds itself (the control cluster's)."""
    return f"{scope(component, cluster)}{SEPARATOR}k8s"


def manifest_name(owner: str, manifest: Mapping[str, Any]) -> str:
    """The logical name of a rendered Kubernetes object: `owner:Kind:namespace/name`, or
    `owner:Kind:name` for a cluster-scoped object. Kind is part of it because two kinds may share an
    object name (a Service and the Deployment behind it)."""
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    return f"{owner}{SEPARATOR}{manifest['kind']}{SEPARATOR}" + (
        f"{namespace}/{metadata['name']}" if namespace else metadata["name"])


def pool_name(component: str, pool: str) -> str:
    """The logical name of a node pool's resource inside a cluster's cloud component: `component:pool`.
    Joined by `-` (before this encoding) pool `system` took the system pool's name, and cluster `a`'s pool
    `gke-b` that of cluster `a-gke`'s pool `b`."""
    return f"{component}{SEPARATOR}{pool}"


def legacy_pool_name(component: str, pool: str) -> tuple[str, ...]:
    """The name a node pool's resource had before `pool_name` (its alias), if any: pool `system` has none,
    its old name being the system pool's (no stack holds one: its preview failed on the duplicate URN)."""
    return () if pool == SYSTEM_POOL else (f"{component}-{pool}",)


def legacy_name(cluster: str, *parts: str) -> str:
    """The name a cluster's resource had before this encoding: `cluster-part-part`."""
    return "-".join((cluster, *parts))


def legacy_manifest_name(cluster: str, manifest: Mapping[str, Any]) -> str:
    """The name a rendered object had before this encoding: cluster, lower-case kind, namespace, name."""
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    return legacy_name(cluster, manifest["kind"].lower(), *((namespace,) if namespace else ()), metadata["name"])


def aliased(opts: pulumi.ResourceOptions, *old: str) -> pulumi.ResourceOptions:
    """`opts` with the names the resource had before (same parent, same type) as aliases."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=name) for name in old]))


def provider_identifier(cluster: str) -> str:
    """The kubernetes Provider's `cluster_identifier`: the provider is replaced only when this changes,
    so an unknown kubeconfig at preview (a cluster being created) never replaces its workloads."""
    return f"modelplane-{cluster}"


def config_path(namespace: str, *parts: str) -> str:
    """A `pulumi config set --path` key: `ns:a.b.c`, with `["a.b"]` for a part that holds a dot."""
    return f"{namespace}:" + "".join(f'["{part}"]' if "." in part else f".{part}" for part in parts).lstrip(".")
