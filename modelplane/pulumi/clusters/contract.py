"""The contract every cluster component keeps, and the building blocks the cloud modules share.

Every cluster component (one module per cloud in this package, the existing-cluster one, and
`InferenceCluster`, which builds the right one from a manifest) exposes the same outputs, so nothing
downstream branches on the cloud:

- `kubeconfig`: `Output[str]`, always secret.
- `provider`: a `pulumi_kubernetes.Provider` whose `cluster_identifier` is fixed by the cluster's
  name: an unknown kubeconfig at preview (a cluster being created or changed) updates the provider
  instead of replacing it, so the workloads on the cluster are not replaced either. It is registered
  on first access (same name, parent and options whenever that is), so a stack that deploys nothing
  to the cluster holds no provider for it: the engine starts one plugin process per provider
  resource, which made the split layout's fleet stack grow with the cluster count. A component whose
  provisioning creates objects on the cluster (the RWX StorageClass of GKE, EKS, AKS and Nebius)
  reads it while it builds, so it always has one.
- `storage_class_name`: the ReadWriteMany StorageClass ModelCache volumes use (created by the
  component where the cloud offers one; named by the manifest for an existing cluster), or None.
- `anchor`: the resource the cluster's workloads are `deleted_with`: the cloud cluster the stack
  created, so `pulumi destroy` deletes the cluster without first deleting each workload on it. None
  for an existing cluster: Pulumi skips deleting a resource whose `deleted_with` target is deleted
  too, which would leave the workloads running on a cluster the stack does not own.

GPU pools are labelled `modelplane.ai/pool=<pool>` (pods are pinned to their pool by it),
`modelplane.ai/gpu=<accelerator type>` and `nvidia.com/gpu.present=true`, and tainted
`nvidia.com/gpu=true:NoSchedule` (GKE taints them itself), which the serving stack's pods tolerate.
Autoscaling runs between the pool's floor (`minNodeCount`, default `nodeCount`) and ceiling
(`maxNodeCount`, default `nodeCount`); the ceiling is the capacity the scheduler fills.

A cloud's SDK is imported only by its module, and a module only when a cluster of that cloud is
built (`inference_cluster.CLOUD_MODULES`), so a fleet without Azure never imports
`pulumi_azure_native`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import Fleet, NodePool
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.api.clouds import Accelerator, Provisioning
from modelplane.compose import GPU_TOLERATION, POOL_LABEL
from modelplane.invariants import present
from modelplane.pulumi.names import provider_identifier

GPU_LABEL = "modelplane.ai/gpu"
RWX_STORAGE_CLASS = "modelplane-rwx"
"""Default name of the ReadWriteMany StorageClass a cluster component creates for ModelCache volumes."""
NVIDIA_GPU_PRESENT = {"nvidia.com/gpu.present": "true"}
"""The label NVIDIA's GPU components select GPU nodes by (GKE's DRA setup guide requires it)."""
GPU_TAINT_KEY = GPU_TOLERATION["key"]
GPU_TAINT_VALUE = "true"
"""Every provisioned GPU pool's taint is `nvidia.com/gpu=true:NoSchedule`, in each cloud's spelling."""

P = TypeVar("P", bound=pulumi.ProviderResource)
Shape = TypeVar("Shape")
"""A cloud's provisioning block of an InferenceClass (`provisioning.aks`, `.gke`, ...)."""
ProviderSettings = Mapping[str, pulumi.Input[Any]]
"""Keyword arguments of a cloud's Pulumi provider (snake_case: `subscription_id`, `api_key`, ...)
for an explicit provider built from a named credentials set."""


class GpuPoolArgs(TypedDict):
    """What every provisioned GPU pool has, whatever the cloud calls its machines."""

    name: str
    """The node pool / node group name and the `modelplane.ai/pool` label value."""
    accelerator_type: str
    """The GPU type (nvidia-l4, nvidia-h100): the `modelplane.ai/gpu` label (and GKE's accelerator type)."""
    accelerator_count: int
    """GPUs per node."""
    node_count: int
    """Nodes to start with."""
    min_node_count: int
    """Autoscaling floor (equal to node_count and max_node_count for a fixed-size pool)."""
    max_node_count: int
    """Autoscaling ceiling: the capacity the fleet scheduler fills."""
    zones: Sequence[str]
    """Zones of the pool's nodes (GKE zones, EC2 availability zones, Azure zones); empty: any."""


class MachinePoolArgs(GpuPoolArgs):
    """A GPU pool on a cloud that sizes nodes by machine type and boot disk (GKE, EKS, AKS)."""

    machine_type: str
    """The GKE machine type (g2-standard-8), EC2 instance type (p5.48xlarge) or Azure VM size."""
    disk_size_gb: int
    """Boot disk size per node."""


class ClusterInputs(TypedDict):
    """What `InferenceCluster` hands a cloud module's `build(name, manifest, inputs, opts)` besides the manifest."""

    fleet: Fleet
    """The fleet: pools are provisioned from their InferenceClass's `spec.provisioning`."""
    rwx_storage_class: str
    """Name of the ReadWriteMany StorageClass to create where the cloud offers one."""
    provider_settings: ProviderSettings | None
    """The cluster's credentials set as provider arguments, or None for the ambient configuration."""
    gcp_project: str | None
    """GKE only: the project when the manifest names none."""
    kubeconfig: pulumi.Input[str] | None
    """Existing only: the kubeconfig."""
    pool_nodes: pulumi.Input[Mapping[str, int]]
    """Pool -> the nodes the placement holds on it; a cloud whose node groups do not scale themselves
    (EKS) sizes each group to it, within the pool's floor and ceiling."""


class ClusterComponent(pulumi.ComponentResource):
    """The outputs every cluster component exposes (see the module docstring)."""

    kubeconfig: pulumi.Output[str]
    """The kubeconfig, secret."""
    storage_class_name: str | None
    """The ReadWriteMany StorageClass for ModelCache volumes, or None."""
    anchor: pulumi.Resource | None
    """What the cluster's workloads are `deleted_with`: the cloud cluster the stack created, or None."""
    _make_provider: Callable[[], k8s.Provider]
    _provider: k8s.Provider | None = None

    def provided_by(self, make: Callable[[], k8s.Provider]) -> None:
        """Declare how the cluster's provider is built; `make` runs once, on the first read of `provider`."""
        self._make_provider = make

    @property
    def provider(self) -> k8s.Provider:
        """The cluster's Kubernetes provider (stable `cluster_identifier`), registered on the first read and
        the same object on every later one: read it only to deploy to the cluster (module docstring)."""
        if self._provider is None:
            self._provider = self._make_provider()
        return self._provider


def provisioned_pools(cluster: ClusterManifest, fleet: Fleet,
                      block: Callable[[Provisioning], Shape | None]) -> list[tuple[NodePool, Shape]]:
    """Each pool of a provisioned InferenceCluster with its class's provisioning block for the
    cluster's cloud (`block`, e.g. `lambda p: p.aks`), which validation guarantees is there."""
    found = []
    for pool in cluster.spec.node_pools:
        klass = fleet.inference_class(pool.class_name)
        provisioning = present(klass.spec.provisioning if klass else None,
                               f"validated: pool {cluster.name}/{pool.name}'s class {pool.class_name} provisions it "
                               "(refs.pool_classes)")
        shape = present(block(provisioning), f"validated: pool {cluster.name}/{pool.name}'s class {pool.class_name} "
                                             "has the cluster's cloud's provisioning block")
        found.append((pool, shape))
    return found


def gpu_pool(pool: NodePool, accelerator: Accelerator) -> GpuPoolArgs:
    """A pool's size and GPUs: `nodeCount` is the floor unless `minNodeCount` lowers it; `maxNodeCount`
    (default `nodeCount`) is the ceiling, which is the capacity the scheduler counts on."""
    return {"name": pool.name, "accelerator_type": accelerator.type, "accelerator_count": accelerator.count,
            "node_count": pool.node_count,
            "min_node_count": pool.min_node_count if pool.min_node_count is not None else pool.node_count,
            "max_node_count": pool.capacity, "zones": list(pool.zones)}


def machine_pool(pool: NodePool, machine_type: str, disk_size_gb: int, accelerator: Accelerator) -> MachinePoolArgs:
    return {**gpu_pool(pool, accelerator), "machine_type": machine_type, "disk_size_gb": disk_size_gb}


def pool_labels(pool: str, accelerator_type: str) -> dict[str, str]:
    """Node labels every provisioned GPU pool carries."""
    return {POOL_LABEL: pool, GPU_LABEL: accelerator_type, **NVIDIA_GPU_PRESENT}


def kubernetes_provider(name: str, cluster: str, kubeconfig: pulumi.Input[str], parent: pulumi.Resource,
                        depends_on: Sequence[pulumi.Resource] = ()) -> k8s.Provider:
    """The cluster's provider, identified by its name rather than by its (maybe unknown) kubeconfig."""
    return k8s.Provider(f"{name}-k8s", kubeconfig=pulumi.Output.secret(kubeconfig),
                        cluster_identifier=provider_identifier(cluster),
                        opts=ResourceOptions(parent=parent, depends_on=list(depends_on)))


def rwx_storage_class(name: str, class_name: str, provisioner: str, parameters: Mapping[str, pulumi.Input[str]],
                      provider: k8s.Provider, parent: pulumi.Resource, cluster: pulumi.Resource, *,
                      mount_options: Sequence[str] = (), binding_mode: str = "Immediate",
                      after: Sequence[pulumi.Resource] = ()) -> k8s.storage.v1.StorageClass:
    """The ReadWriteMany class `class_name` for ModelCache volumes, `deleted_with` its `cluster`."""
    return k8s.storage.v1.StorageClass(
        f"{name}-rwx", metadata={"name": class_name}, provisioner=provisioner, parameters=dict(parameters) or None,
        reclaim_policy="Delete", volume_binding_mode=binding_mode, allow_volume_expansion=True,
        mount_options=list(mount_options) or None,
        opts=ResourceOptions(parent=parent, provider=provider, deleted_with=cluster, depends_on=list(after)))


def explicit_provider(make: Callable[..., P], name: str, settings: ProviderSettings | None, parent: pulumi.Resource,
                      **fixed: pulumi.Input[Any]) -> P | None:
    """The cloud provider `make` builds from a named credentials set's `settings` (plus `fixed`
    arguments), or None, which leaves the stack's ambient provider configuration in charge."""
    if settings is None and not fixed:
        return None
    try:
        return make(name, **{**(settings or {}), **fixed}, opts=ResourceOptions(parent=parent))
    except TypeError as error:
        raise ValueError(f"{name}: the credentials set holds a setting this provider does not take ({error}); "
                         "its keys are the provider's own configuration keys") from None
