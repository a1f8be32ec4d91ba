"""An AKS cluster for GPU inference (pulumi-azure-native): resource group, cluster, GPU node pools, Azure Files.

What it builds, and why each setting:
- An explicit `azure-native` provider with the settings of the cluster's credentials set, or the
  stack's ambient Azure configuration (`az login`, `azure-native:*` config, environment).
- A resource group `modelplane-<cluster>` in the manifest's `location`.
- The managed cluster: system-assigned identity, Kubernetes RBAC with local accounts (the admin
  kubeconfig carries a client certificate, so Pulumi needs nothing else to reach the cluster),
  Azure CNI overlay, the Azure Files CSI driver, and an autoscaled system pool for the serving
  stack's controllers, so GPU pools can scale to zero. AKS creates the virtual network.
- One User-mode node pool per GPU pool from its class's `provisioning.aks`: VM size, OS disk,
  zones, autoscaling between the pool's floor and ceiling, node labels, the
  `nvidia.com/gpu=true:NoSchedule` taint, and `gpuProfile.driver: Install`: AKS installs the NVIDIA
  driver and container runtime on the node image (AKS's option, instead of the NVIDIA GPU
  Operator, whose driver cannot coexist with it). AKS deploys no device plugin with it, so the
  serving stack's NVIDIA DRA driver, reading the driver at the host root, is what hands GPUs to
  pods. AKS names pools with 1-12 lowercase letters and digits (the API validates that). The
  node count is ignored after creation: the autoscaler owns it.
- A ReadWriteMany StorageClass on Azure Files (Premium, SMB, with the mount options Azure
  documents for Linux clients); the CSI driver creates the storage account on demand.
- The kubeconfig: the cluster's admin credentials (`listClusterAdminCredential`), decoded.

An InfiniBand pool (`fabric.type: InfiniBand`) gets no network operator here: its VM size's
InfiniBand adapters are not set up for GPUDirect RDMA by this component.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native as azure
from pulumi import ResourceOptions

from modelplane.api import Fleet
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import (
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    RWX_STORAGE_CLASS,
    ClusterComponent,
    ClusterInputs,
    MachinePoolArgs,
    ProviderSettings,
    explicit_provider,
    kubernetes_provider,
    machine_pool,
    pool_labels,
    provisioned_pools,
    rwx_storage_class,
)
from modelplane.pulumi.clusters.kubeconfig import decoded_kubeconfig
from modelplane.pulumi.names import aliased, legacy_pool_name, pool_name

GPU_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:NoSchedule"
AZURE_FILES_MOUNT_OPTIONS = ("dir_mode=0777", "file_mode=0777", "uid=0", "gid=0", "mfsymlinks", "cache=strict",
                             "actimeo=30", "nobrl")


class AksClusterArgs(TypedDict):
    name: str
    """The AKS cluster name (the InferenceCluster's name)."""
    location: str
    """The Azure region, e.g. westeurope."""
    kubernetes_version: str
    """Kubernetes version, e.g. "1.34" (AKS takes the latest patch of a major.minor)."""
    pools: Sequence[MachinePoolArgs]
    """The GPU node pools (machine_type is the Azure VM size)."""
    provider_settings: NotRequired[ProviderSettings | None]
    """Arguments of an explicit `azure-native` provider (a named credentials set: `subscription_id`,
    `tenant_id`, `client_id`, `client_secret`, ...). Default: None, the ambient Azure configuration."""
    system_vm_size: NotRequired[str]
    """VM size of the system pool (1-3 nodes). Default: Standard_D4s_v5."""
    storage_class_name: NotRequired[str]
    """Name of the ReadWriteMany StorageClass created for ModelCache volumes. Default: modelplane-rwx."""


def aks_args(cluster: ClusterManifest, fleet: Fleet) -> AksClusterArgs:
    """AksClusterArgs from a validated AKS InferenceCluster."""
    aks = present(cluster.spec.cluster.aks,
                  f"validated: InferenceCluster {cluster.name}, an AKS cluster, has an aks block")
    pools = []
    for pool, machine in provisioned_pools(cluster, fleet, lambda provisioning: provisioning.aks):
        pools.append(machine_pool(pool, machine.vm_size, machine.disk_size_gb, machine.accelerator))
    return {"name": cluster.name, "location": aks.location, "kubernetes_version": aks.kubernetes_version,
            "pools": pools}


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> AksCluster:
    return AksCluster(f"{name}-aks", {**aks_args(manifest, inputs["fleet"]), "storage_class_name": inputs["rwx_storage_class"],
                                      "provider_settings": inputs["provider_settings"]}, opts)


class AksCluster(ClusterComponent):
    """An AKS cluster with NVIDIA GPU node pools, an Azure Files RWX class and a kubeconfig."""

    storage_class_name: str
    """The ReadWriteMany StorageClass on Azure Files."""
    azure_provider: azure.Provider | None
    """The explicit provider of the cluster's credentials set, or None (ambient configuration)."""
    cluster: azure.containerservice.ManagedCluster
    node_pools: dict[str, azure.containerservice.AgentPool]
    """GPU node pools by pool name."""

    def __init__(self, name: str, args: AksClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:AksCluster", name, {}, opts)
        self.storage_class_name = args.get("storage_class_name", RWX_STORAGE_CLASS)
        self.azure_provider = explicit_provider(azure.Provider, f"{name}-azure", args.get("provider_settings"), self)
        child = ResourceOptions(parent=self, provider=self.azure_provider)
        group = azure.resources.ResourceGroup(f"{name}-rg", resource_group_name=f"modelplane-{args['name']}",
                                              location=args["location"], opts=child)
        self.cluster = azure.containerservice.ManagedCluster(
            f"{name}-cluster", resource_name_=args["name"], resource_group_name=group.name,
            location=args["location"], dns_prefix=args["name"], kubernetes_version=args["kubernetes_version"],
            identity={"type": "SystemAssigned"}, enable_rbac=True, disable_local_accounts=False,
            network_profile={"network_plugin": "azure", "network_plugin_mode": "overlay"},
            storage_profile={"file_csi_driver": {"enabled": True}},
            agent_pool_profiles=[{
                "name": "system", "mode": "System", "os_type": "Linux", "type": "VirtualMachineScaleSets",
                "vm_size": args.get("system_vm_size", "Standard_D4s_v5"), "count": 1,
                "enable_auto_scaling": True, "min_count": 1, "max_count": 3}],
            # The GPU pools are AgentPool resources of their own; the cluster reads them back into
            # agentPoolProfiles, which must not become a diff.
            opts=ResourceOptions.merge(child, ResourceOptions(ignore_changes=["agentPoolProfiles"])))
        self.node_pools = {pool["name"]: self._gpu_pool(name, group, pool, child) for pool in args["pools"]}

        credentials = azure.containerservice.list_managed_cluster_admin_credentials_output(
            resource_group_name=group.name, resource_name=self.cluster.name,
            opts=pulumi.InvokeOutputOptions(provider=self.azure_provider))
        self.kubeconfig = pulumi.Output.secret(credentials.kubeconfigs.apply(
            lambda kubeconfigs: decoded_kubeconfig(args["name"], kubeconfigs[0].value)))
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self))
        rwx_storage_class(name, self.storage_class_name, "file.csi.azure.com", {"skuName": "Premium_LRS"},
                          self.provider, self, self.cluster, mount_options=AZURE_FILES_MOUNT_OPTIONS)
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig, "fqdn": self.cluster.fqdn})

    def _gpu_pool(self, name: str, group: azure.resources.ResourceGroup, pool: MachinePoolArgs,
                  child: ResourceOptions) -> azure.containerservice.AgentPool:
        return azure.containerservice.AgentPool(
            pool_name(name, pool["name"]), agent_pool_name=pool["name"], resource_group_name=group.name,
            resource_name_=self.cluster.name, mode="User", os_type="Linux", type="VirtualMachineScaleSets",
            vm_size=pool["machine_type"], os_disk_size_gb=pool["disk_size_gb"], count=pool["node_count"],
            enable_auto_scaling=True, min_count=pool["min_node_count"], max_count=max(pool["max_node_count"], 1),
            availability_zones=list(pool["zones"]) or None,
            node_labels=pool_labels(pool["name"], pool["accelerator_type"]), node_taints=[GPU_TAINT],
            gpu_profile={"driver": "Install"},
            opts=aliased(ResourceOptions.merge(child, ResourceOptions(ignore_changes=["count"])),
                         *legacy_pool_name(name, pool["name"])))
