"""Inference clusters: one contract for GKE, EKS and existing clusters.

Every cluster component (`GkeCluster`, `EksCluster`, `ExistingCluster`, and `InferenceCluster`,
which builds the right one from a manifest) exposes the same outputs, so nothing downstream
branches on the cloud:

- `kubeconfig`: `Output[str]`, always secret.
- `provider`: a `pulumi_kubernetes.Provider` whose `cluster_identifier` is fixed by the cluster's
  name: an unknown kubeconfig at preview (a cluster being created or changed) updates the provider
  instead of replacing it, so the workloads on the cluster are not replaced either.
- `storage_class_name`: the ReadWriteMany StorageClass ModelCache volumes use (created for GKE on
  Filestore and for EKS on EFS; named by the manifest for an existing cluster), or None.
- `anchor`: the resource the cluster's workloads are `deleted_with`: the GKE/EKS cluster, or for an
  existing cluster its provider (removing an existing cluster from the fleet forgets its workloads
  instead of trying to reach a cluster that may be gone).

GPU nodes carry `modelplane.ai/pool=<pool>` (pods are pinned to their pool with it) and
`modelplane.ai/gpu=<accelerator type>`. Operators label an existing cluster's nodes themselves.
`pulumi_gcp` and `pulumi_aws` are imported only by `gke.py` and `eks.py`, and those only when a
cluster of that source is built, so an existing-only fleet never pays for the cloud SDKs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import ClusterSource, Fleet, Provider
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.compose import POOL_LABEL
from modelplane.pulumi.names import provider_identifier

if TYPE_CHECKING:  # the cloud modules are imported only when a cluster of theirs is built
    from modelplane.pulumi.eks import EksCluster
    from modelplane.pulumi.gke import GkeCluster

GPU_LABEL = "modelplane.ai/gpu"
RWX_STORAGE_CLASS = "modelplane-rwx"
"""Default name of the ReadWriteMany StorageClass created on GKE/EKS clusters for ModelCache volumes."""
NVIDIA_GPU_PRESENT = {"nvidia.com/gpu.present": "true"}
"""The label NVIDIA's GPU components select GPU nodes by (GKE's DRA setup guide requires it)."""


class GpuPoolArgs(TypedDict):
    """One GPU node pool of a provisioned cluster (GKE node pool or EKS managed node group)."""

    name: str
    """The node pool / node group name and the `modelplane.ai/pool` label value (at most 40 characters)."""
    machine_type: str
    """The GKE machine type (g2-standard-8) or EC2 instance type (p5.48xlarge)."""
    accelerator_type: str
    """The GPU type (nvidia-l4, nvidia-h100): GKE's accelerator type; the `modelplane.ai/gpu` label."""
    accelerator_count: int
    """GPUs per node."""
    disk_size_gb: int
    """Boot disk size per node."""
    node_count: int
    """Nodes to start with."""
    min_node_count: int
    """Autoscaling floor (equal to node_count and max_node_count for a fixed-size pool)."""
    max_node_count: int
    """Autoscaling ceiling: the capacity the fleet scheduler fills."""
    zones: Sequence[str]
    """Zones (GKE) or availability zones (EKS) of the pool's nodes; empty: every zone of the cluster."""


def gpu_pools(cluster: ClusterManifest, fleet: Fleet, provider: Provider) -> list[GpuPoolArgs]:
    """The pools of a GKE/EKS InferenceCluster, provisioned as their InferenceClass says.

    `nodeCount` is the floor unless `minNodeCount` lowers it; `maxNodeCount` (default `nodeCount`)
    is the ceiling, which is the capacity the scheduler counts on.
    """
    pools: list[GpuPoolArgs] = []
    for pool in cluster.spec.node_pools:
        klass = fleet.inference_class(pool.class_name)
        provisioning = klass.spec.provisioning if klass else None
        assert provisioning is not None, "validated: a GKE/EKS pool's class provisions it (refs.pool_classes)"
        if provider is Provider.GKE:
            assert provisioning.gke is not None, "validated: the provisioning block matches the provider"
            machine_type, accelerator, disk = (provisioning.gke.machine_type, provisioning.gke.accelerator,
                                               provisioning.gke.disk_size_gb)
        else:
            assert provisioning.eks is not None, "validated: the provisioning block matches the provider"
            machine_type, accelerator, disk = (provisioning.eks.instance_type, provisioning.eks.accelerator,
                                               provisioning.eks.disk_size_gb)
        pools.append({
            "name": pool.name, "machine_type": machine_type, "accelerator_type": accelerator.type,
            "accelerator_count": accelerator.count, "disk_size_gb": disk,
            "node_count": pool.node_count,
            "min_node_count": pool.min_node_count if pool.min_node_count is not None else pool.node_count,
            "max_node_count": pool.capacity, "zones": list(pool.zones)})
    return pools


def pool_labels(pool: str, accelerator_type: str) -> dict[str, str]:
    """Node labels every provisioned GPU pool carries."""
    return {POOL_LABEL: pool, GPU_LABEL: accelerator_type, **NVIDIA_GPU_PRESENT}


def kubernetes_provider(name: str, cluster: str, kubeconfig: pulumi.Input[str], parent: pulumi.Resource,
                        depends_on: list[pulumi.Resource] | None = None) -> k8s.Provider:
    """The cluster's provider, identified by its name rather than by its (maybe unknown) kubeconfig."""
    return k8s.Provider(f"{name}-k8s", kubeconfig=pulumi.Output.secret(kubeconfig),
                        cluster_identifier=provider_identifier(cluster),
                        opts=ResourceOptions(parent=parent, depends_on=depends_on or []))


def rwx_storage_class(name: str, class_name: str, provisioner: str, parameters: Mapping[str, pulumi.Input[str]],
                      provider: k8s.Provider, parent: pulumi.Resource,
                      cluster: pulumi.Resource) -> k8s.storage.v1.StorageClass:
    """The ReadWriteMany class `class_name` for ModelCache volumes, `deleted_with` its `cluster`."""
    return k8s.storage.v1.StorageClass(
        f"{name}-rwx", metadata={"name": class_name}, provisioner=provisioner, parameters=dict(parameters),
        reclaim_policy="Delete", volume_binding_mode="Immediate", allow_volume_expansion=True,
        opts=ResourceOptions(parent=parent, provider=provider, deleted_with=cluster))


class ClusterComponent(pulumi.ComponentResource):
    """The outputs every cluster component exposes (see the module docstring)."""

    kubeconfig: pulumi.Output[str]
    """The kubeconfig, secret."""
    provider: k8s.Provider
    """The cluster's Kubernetes provider (stable `cluster_identifier`)."""
    storage_class_name: str | None
    """The ReadWriteMany StorageClass for ModelCache volumes, or None."""
    anchor: pulumi.Resource
    """What the cluster's workloads are `deleted_with`."""


class ExistingClusterArgs(TypedDict):
    name: str
    """The cluster's name in the fleet (the InferenceCluster's metadata.name)."""
    kubeconfig: pulumi.Input[str]
    """Kubeconfig for the cluster, from Pulumi secret config; kept secret in state."""
    storage_class_name: NotRequired[str | None]
    """A ReadWriteMany StorageClass that already exists on the cluster, for ModelCache volumes.
    Default: None (ModelCache volumes use the cluster's default StorageClass, which must then
    support ReadWriteMany; compose warns)."""


class ExistingCluster(ClusterComponent):
    """A cluster you already run, reached by kubeconfig. Label its GPU nodes `modelplane.ai/pool=<pool>`.
    Its `anchor` is its provider."""

    def __init__(self, name: str, args: ExistingClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:ExistingCluster", name, {}, opts)
        self.kubeconfig = pulumi.Output.secret(args["kubeconfig"])
        self.provider = kubernetes_provider(name, args["name"], self.kubeconfig, self)
        self.storage_class_name = args.get("storage_class_name")
        self.anchor = self.provider
        self.register_outputs({"kubeconfig": self.kubeconfig})


class InferenceClusterArgs(TypedDict):
    cluster: ClusterManifest
    """The validated InferenceCluster manifest; `spec.cluster.source` picks GKE, EKS or Existing."""
    fleet: Fleet
    """The fleet it belongs to: GKE/EKS pools are provisioned from their InferenceClass's
    `spec.provisioning` (machine type, accelerator, disk)."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """Existing clusters only (required there): the kubeconfig, normally read from the secret
    config key the manifest names (`spec.cluster.existing.kubeconfig`)."""
    gcp_project: NotRequired[str | None]
    """GKE clusters only: the project when the manifest names none (stack config `gcp:project`).
    Default: None, which is an error for a GKE cluster whose manifest names no project."""
    rwx_storage_class: NotRequired[str]
    """GKE/EKS clusters only: the name of the ReadWriteMany StorageClass to create; it must be the
    one compose puts in ModelCache volumes (`compose.Settings.gke_rwx_storage_class` /
    `eks_rwx_storage_class`). Default: `modelplane-rwx`. An Existing cluster's manifest names its own."""


class InferenceCluster(ClusterComponent):
    """A GPU cluster of the fleet, built from its InferenceCluster manifest on GKE, EKS or an existing cluster."""

    def __init__(self, name: str, args: InferenceClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:InferenceCluster", name, {}, opts)
        manifest = args["cluster"]
        spec = manifest.spec.cluster
        child = ResourceOptions(parent=self)
        rwx = args.get("rwx_storage_class", RWX_STORAGE_CLASS)
        built: GkeCluster | EksCluster | ExistingCluster
        if spec.source is ClusterSource.GKE:
            from modelplane.pulumi.gke import GkeCluster, gke_args

            gke = gke_args(manifest, args["fleet"], args.get("gcp_project"))
            built = GkeCluster(f"{name}-gke", {**gke, "storage_class_name": rwx}, child)
        elif spec.source is ClusterSource.EKS:
            from modelplane.pulumi.eks import EksCluster, eks_args

            built = EksCluster(f"{name}-eks", {**eks_args(manifest, args["fleet"]), "storage_class_name": rwx}, child)
        else:
            assert spec.existing is not None, "validated: an Existing cluster has an existing block"
            if "kubeconfig" not in args:
                raise ValueError(f"InferenceCluster {manifest.name}: an Existing cluster needs its kubeconfig "
                                 f"(secret config key {spec.existing.kubeconfig!r})")
            built = ExistingCluster(f"{name}-existing", {
                "name": manifest.name, "kubeconfig": args["kubeconfig"],
                "storage_class_name": spec.existing.storage_class_name}, child)
        self.kubeconfig = built.kubeconfig
        self.provider = built.provider
        self.storage_class_name = built.storage_class_name
        self.anchor = built.anchor
        self.register_outputs({"kubeconfig": self.kubeconfig})
