"""A Nebius mk8s cluster for GPU inference (pulumi-nebius): network, cluster, node groups, shared filesystem.

What it builds, and why each setting:
- An explicit `nebius` provider with the settings of the cluster's credentials set, or the
  stack's ambient Nebius configuration. The project the resources are created in (and so the
  region) is that provider's `parentId` or its CLI profile's, as the manifest's `nebius: {}` allows.
- A VPC network and a subnet that takes its addresses from the network's pools.
- The mk8s cluster with a public control-plane endpoint and a three-member etcd.
- A shared filesystem for ModelCache volumes, attached to every node group under one mount tag and
  mounted by cloud-init at `/mnt/data`, Nebius's `csi-mounted-fs-path` CSI driver (Helm) serving
  ReadWriteMany volumes from it, and a StorageClass pinned to that driver (as Nebius documents
  "filesystem over CSI"). A shared filesystem has a fixed size (`filesystem_size_gib`).
- A small CPU system node group for the serving stack's controllers, so GPU groups can scale to zero.
- One node group per GPU pool from its class's `provisioning.nebius`: platform, preset, boot
  disk, `gpuSettings.driversPreset` (mk8s preinstalls that NVIDIA driver stack on the node image,
  Nebius's way instead of the GPU Operator) with `gpuSettings.dra: true` (mk8s then runs no legacy
  device plugin, so the serving stack's NVIDIA DRA driver, reading the driver at the host root,
  hands GPUs to pods), node labels, the `nvidia.com/gpu=true:NoSchedule` taint, and a fixed size
  or autoscaling between the pool's floor and ceiling. An InfiniBand pool joins a GPU cluster on
  its fabric (one GPU cluster per fabric). Nebius has no zones to pin a group to.
- A kubeconfig that authenticates through `nebius mk8s v1 cluster get-token`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import pulumi_nebius as nebius
from pulumi import ResourceOptions

from modelplane.api import FabricType, Fleet
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.compose import GPU_TOLERATION
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import (
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    RWX_STORAGE_CLASS,
    ClusterComponent,
    ClusterInputs,
    GpuPoolArgs,
    ProviderSettings,
    explicit_provider,
    gpu_pool,
    kubernetes_provider,
    pool_labels,
    provisioned_pools,
    rwx_storage_class,
)
from modelplane.pulumi.clusters.kubeconfig import nebius_kubeconfig
from modelplane.pulumi.names import aliased, legacy_pool_name, pool_name

DISK_TYPE = "NETWORK_SSD"
MOUNT_TAG = "modelplane-cache"
MOUNT_POINT = "/mnt/data"
CLOUD_INIT = f"""#cloud-config
runcmd:
  - mkdir -p {MOUNT_POINT}
  - mount -t virtiofs {MOUNT_TAG} {MOUNT_POINT}
  - printf "{MOUNT_TAG} {MOUNT_POINT} virtiofs defaults,nofail 0 2\\n" >> /etc/fstab
"""
"""Mounts the shared filesystem on every node at first boot and keeps it in fstab."""
CSI_CHART = "oci://cr.eu-north1.nebius.cloud/mk8s/helm/csi-mounted-fs-path"
CSI_CHART_VERSION = "0.1.6"
CSI_DRIVER = "mounted-fs-path.csi.nebius.ai"
"""Nebius's CSI driver for paths on a pre-mounted filesystem: its chart, pinned, and the driver
name the chart registers (the StorageClass's provisioner)."""


class NebiusPoolArgs(GpuPoolArgs):
    platform: str
    """The compute platform (gpu-h100-sxm)."""
    preset: str
    """The platform's preset (8gpu-128vcpu-1600gb)."""
    disk_size_gb: int
    """Boot disk size per node."""
    drivers_preset: str
    """The NVIDIA driver stack mk8s preinstalls (cuda13.0)."""
    infiniband_fabric: NotRequired[str | None]
    """The InfiniBand fabric whose GPU cluster the nodes join. Default: None (no GPU cluster)."""


class NebiusClusterArgs(TypedDict):
    name: str
    """The mk8s cluster name (the InferenceCluster's name)."""
    kubernetes_version: str
    """Kubernetes version as major.minor, e.g. "1.34"."""
    pools: Sequence[NebiusPoolArgs]
    """The GPU node groups."""
    provider_settings: NotRequired[ProviderSettings | None]
    """Arguments of an explicit `nebius` provider (a named credentials set: `parent_id`, `profile`,
    `service_account`, ...). Default: None, the ambient Nebius configuration."""
    storage_class_name: NotRequired[str]
    """Name of the ReadWriteMany StorageClass created for ModelCache volumes. Default: modelplane-rwx."""
    filesystem_size_gib: NotRequired[int]
    """Size of the shared filesystem behind ModelCache volumes. Default: 1024."""
    system_platform: NotRequired[str]
    """Platform of the system node group (1-2 nodes, preset 4vcpu-16gb). Default: cpu-d3."""


def nebius_args(cluster: ClusterManifest, fleet: Fleet) -> NebiusClusterArgs:
    """NebiusClusterArgs from a validated Nebius InferenceCluster."""
    block = present(cluster.spec.cluster.nebius,
                    f"validated: InferenceCluster {cluster.name}, a Nebius cluster, has a nebius block")
    pools: list[NebiusPoolArgs] = []
    for pool, shape in provisioned_pools(cluster, fleet, lambda provisioning: provisioning.nebius):
        infiniband = pool.fabric.infiniband if pool.fabric.type is FabricType.INFINIBAND else None
        fabric = infiniband.fabric if infiniband else None
        pools.append({**gpu_pool(pool, shape.accelerator), "platform": shape.platform, "preset": shape.preset,
                      "disk_size_gb": shape.disk_size_gb, "drivers_preset": shape.drivers_preset,
                      "infiniband_fabric": fabric})
    return {"name": cluster.name, "kubernetes_version": block.kubernetes_version, "pools": pools}


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> NebiusCluster:
    return NebiusCluster(f"{name}-nebius", {**nebius_args(manifest, inputs["fleet"]),
                                            "storage_class_name": inputs["rwx_storage_class"],
                                            "provider_settings": inputs["provider_settings"]}, opts)


class NebiusCluster(ClusterComponent):
    """A Nebius mk8s cluster with NVIDIA GPU node groups, a shared-filesystem RWX class and a kubeconfig."""

    storage_class_name: str
    """The ReadWriteMany StorageClass on the shared filesystem."""
    nebius_provider: nebius.Provider | None
    """The explicit provider of the cluster's credentials set, or None (ambient configuration)."""
    cluster: nebius.Mk8sV1Cluster
    node_groups: dict[str, nebius.Mk8sV1NodeGroup]
    """GPU node groups by pool name."""

    def __init__(self, name: str, args: NebiusClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:NebiusCluster", name, {}, opts)
        self.storage_class_name = args.get("storage_class_name", RWX_STORAGE_CLASS)
        self.nebius_provider = explicit_provider(nebius.Provider, f"{name}-nebius", args.get("provider_settings"),
                                                 self)
        self._child = ResourceOptions(parent=self, provider=self.nebius_provider)
        network = nebius.VpcV1Network(f"{name}-network", name=args["name"], opts=self._child)
        subnet = nebius.VpcV1Subnet(f"{name}-subnet", name=args["name"], network_id=network.id,
                                    ipv4_private_pools={"use_network_pools": True}, opts=self._child)
        self.cluster = nebius.Mk8sV1Cluster(
            f"{name}-cluster", name=args["name"],
            control_plane={"subnet_id": subnet.id, "version": args["kubernetes_version"], "etcd_cluster_size": 3,
                           "endpoints": {"public_endpoint": {}}},
            opts=self._child)
        self._filesystem = nebius.ComputeV1Filesystem(
            f"{name}-cache-fs", name=f"{args['name']}-model-cache", type=DISK_TYPE,
            size_gibibytes=args.get("filesystem_size_gib", 1024), opts=self._child)
        system = nebius.Mk8sV1NodeGroup(
            f"{name}-system", name="modelplane-system", parent_id=self.cluster.id,
            autoscaling={"min_node_count": 1, "max_node_count": 2},
            template=self._template({"platform": args.get("system_platform", "cpu-d3"), "preset": "4vcpu-16gb"}, 64),
            opts=self._child)
        fabrics = sorted({fabric for pool in args["pools"] if (fabric := pool.get("infiniband_fabric"))})
        gpu_clusters = {fabric: nebius.ComputeV1GpuCluster(f"{name}-gpu-cluster-{fabric}", name=f"{args['name']}-{fabric}",
                                                           infiniband_fabric=fabric, opts=self._child)
                        for fabric in fabrics}
        self.node_groups = {pool["name"]: self._gpu_group(name, pool, gpu_clusters) for pool in args["pools"]}

        control_plane = self.cluster.status.apply(lambda status: status.control_plane if status else None)
        self.kubeconfig = pulumi.Output.secret(control_plane.apply(
            lambda plane: nebius_kubeconfig(args["name"], plane.endpoints.public_endpoint,
                                            plane.auth.cluster_ca_certificate)))
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self, depends_on=[system]))
        on_cluster = ResourceOptions(parent=self, provider=self.provider, deleted_with=self.cluster)
        driver = k8s.helm.v3.Release(
            f"{name}-csi-mounted-fs-path", name="csi-mounted-fs-path", chart=CSI_CHART, version=CSI_CHART_VERSION,
            namespace="kube-system",
            values={"dataDir": f"{MOUNT_POINT}/csi-mounted-fs-path-data/", "tolerations": [dict(GPU_TOLERATION)]},
            opts=on_cluster)
        rwx_storage_class(name, self.storage_class_name, CSI_DRIVER, {}, self.provider, self, self.cluster,
                          binding_mode="WaitForFirstConsumer", after=[driver])
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig})

    def _template(self, resources: nebius.Mk8sV1NodeGroupTemplateResourcesArgsDict,
                  disk_size_gb: int) -> nebius.Mk8sV1NodeGroupTemplateArgsDict:
        """What every node group's nodes share: machine, boot disk and the shared filesystem's mount."""
        return {"resources": resources, "boot_disk": {"type": DISK_TYPE, "size_gibibytes": disk_size_gb},
                "filesystems": [{"attach_mode": "READ_WRITE", "mount_tag": MOUNT_TAG,
                                 "existing_filesystem": {"id": self._filesystem.id}}],
                "cloud_init_user_data": CLOUD_INIT}

    def _gpu_group(self, name: str, pool: NebiusPoolArgs,
                   gpu_clusters: dict[str, nebius.ComputeV1GpuCluster]) -> nebius.Mk8sV1NodeGroup:
        template: nebius.Mk8sV1NodeGroupTemplateArgsDict = {**self._template({"platform": pool["platform"], "preset": pool["preset"]}, pool["disk_size_gb"]),
                    "gpu_settings": {"drivers_preset": pool["drivers_preset"], "dra": True},
                    "metadata": {"labels": pool_labels(pool["name"], pool["accelerator_type"])},
                    "taints": [{"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": "NO_SCHEDULE"}]}
        fabric = pool.get("infiniband_fabric")
        if fabric:
            template["gpu_cluster"] = {"id": gpu_clusters[fabric].id}
        low, high = pool["min_node_count"], pool["max_node_count"]
        fixed = low == high
        return nebius.Mk8sV1NodeGroup(
            pool_name(name, pool["name"]), name=pool["name"], parent_id=self.cluster.id, template=template,
            fixed_node_count=pool["node_count"] if fixed else None,
            autoscaling=None if fixed else {"min_node_count": low, "max_node_count": high},
            opts=aliased(self._child, *legacy_pool_name(name, pool["name"])))
