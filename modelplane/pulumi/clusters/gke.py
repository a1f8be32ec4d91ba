"""A GKE cluster for GPU inference (pulumi-gcp): network, cluster, system pool, one node pool per GPU pool.

What it builds, and why each setting:
- An explicit `gcp` provider with the settings of the cluster's credentials set, or the stack's
  ambient gcp configuration.
- A VPC network and subnet with secondary ranges for pods and services (VPC-native cluster).
- A regional Standard cluster without the default node pool, with Workload Identity
  (`<project>.svc.id.goog`) and the Filestore CSI driver (ModelCache volumes are ReadWriteMany).
- A small system node pool for the serving stack's controllers, so GPU nodes can scale to zero.
- One node pool per GPU pool from its class's `provisioning.gke`: machine type, accelerator type and
  count, boot disk, zones, autoscaling between the pool's floor and ceiling (`total_*` limits, so
  counts are for the whole pool, not per zone; `location_policy: ANY` takes GPUs where they exist).
  Pools are prepared for DRA as GKE documents it ("Prepare GKE infrastructure for DRA workloads"):
  automatic driver installation is disabled on the accelerator (`INSTALLATION_DISABLED`; GKE does
  not support it together with DRA), and the driver is installed by GKE's driver-installer
  DaemonSet (`driver_installer` below), GKE's device plugin is switched off with
  `gke-no-default-nvidia-gpu-device-plugin=true`, and the nodes carry `nvidia.com/gpu.present=true`
  and `cloud.google.com/gke-nvidia-gpu-dra-driver=true` (which tells GKE's cluster autoscaler that
  the pool's GPUs are claimed through DRA). GKE itself taints GPU nodes `nvidia.com/gpu=present:NoSchedule`.
- A ReadWriteMany StorageClass on Filestore, and a kubeconfig that authenticates through
  `gke-gcloud-auth-plugin`.

`initial_node_count` is ignored after creation (`ignore_changes`): the autoscaler owns the size,
and changing it would replace the node pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import Fleet
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.api.fleet import DeletionPolicy
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import (
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
from modelplane.pulumi.clusters.kubeconfig import gke_kubeconfig
from modelplane.pulumi.names import aliased, legacy_pool_name, pool_name

GKE_DRA_LABELS = {
    "gke-no-default-nvidia-gpu-device-plugin": "true",
    "cloud.google.com/gke-nvidia-gpu-dra-driver": "true",
}
DRIVER_INSTALLER = ("https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
                    "master/nvidia-driver-installer/cos/daemonset-preloaded.yaml")
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


class GkeClusterArgs(TypedDict):
    deletion_protection: NotRequired[bool]
    """GKE's own deletion protection on the cluster (`spec.deletionPolicy: Orphan`). Default: False."""
    name: str
    """The GKE cluster name (the InferenceCluster's name)."""
    project: str
    """The Google Cloud project."""
    region: str
    """The region of the (regional) cluster, e.g. us-central1."""
    kubernetes_version: str
    """Minimum control-plane version, e.g. "1.34" (DRA's resource.k8s.io/v1 needs 1.34)."""
    pools: Sequence[MachinePoolArgs]
    """The GPU node pools."""
    provider_settings: NotRequired[ProviderSettings | None]
    """Arguments of an explicit `gcp.Provider` (a named credentials set). Default: None, the stack's
    ambient gcp configuration."""
    system_machine_type: NotRequired[str]
    """Machine type of the system pool (one node per zone). Default: e2-standard-4."""
    filestore_tier: NotRequired[str]
    """Filestore tier of the ReadWriteMany StorageClass: standard, premium, enterprise or zonal.
    Default: standard."""
    subnet_cidr: NotRequired[str]
    """Primary range of the nodes' subnet. Default: 10.10.0.0/20 (pods 10.16.0.0/14, services 10.20.0.0/20)."""
    storage_class_name: NotRequired[str]
    """Name of the ReadWriteMany StorageClass created for ModelCache volumes. Default: modelplane-rwx."""
    driver_installer: NotRequired[str | None]
    """URL of the NVIDIA driver-installer DaemonSet manifest applied to the cluster; pin it to a
    commit for reproducible installs. Default: GKE's COS installer (`DRIVER_INSTALLER`). None: do not
    install drivers (you run the GPU Operator or your own installer)."""


def gke_args(cluster: ClusterManifest, fleet: Fleet, project: str | None) -> GkeClusterArgs:
    """GkeClusterArgs from a validated GKE InferenceCluster; `project` is used when the manifest names none."""
    gke = present(cluster.spec.cluster.gke,
                  f"validated: InferenceCluster {cluster.name}, a GKE cluster, has a gke block")
    chosen = gke.project or project
    if not chosen:
        raise ValueError(f"InferenceCluster {cluster.name}: no Google Cloud project; set spec.cluster.gke.project "
                         "or the stack config gcp:project (pulumi config set gcp:project <project>)")
    pools = []
    for pool, machine in provisioned_pools(cluster, fleet, lambda provisioning: provisioning.gke):
        pools.append(machine_pool(pool, machine.machine_type, machine.disk_size_gb, machine.accelerator))
    return {"name": cluster.name, "project": chosen, "region": gke.region,
            "kubernetes_version": gke.kubernetes_version, "pools": pools,
            "deletion_protection": cluster.spec.deletion_policy is DeletionPolicy.ORPHAN}


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> GkeCluster:
    args = gke_args(manifest, inputs["fleet"], inputs["gcp_project"])
    return GkeCluster(f"{name}-gke", {**args, "storage_class_name": inputs["rwx_storage_class"],
                                      "provider_settings": inputs["provider_settings"]}, opts)


class GkeCluster(ClusterComponent):
    """A GKE Standard cluster with DRA-ready GPU node pools, a Filestore RWX class and a kubeconfig."""

    storage_class_name: str
    """The ReadWriteMany StorageClass on Filestore, on the cluster's own network."""
    gcp_provider: gcp.Provider | None
    """The explicit provider of the cluster's credentials set, or None (ambient configuration)."""
    cluster: gcp.container.Cluster
    node_pools: dict[str, gcp.container.NodePool]
    """GPU node pools by pool name."""

    def __init__(self, name: str, args: GkeClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:GkeCluster", name, {}, opts)
        project, region = args["project"], args["region"]
        self.storage_class_name = args.get("storage_class_name", RWX_STORAGE_CLASS)
        self.gcp_provider = explicit_provider(gcp.Provider, f"{name}-gcp", args.get("provider_settings"), self)
        child = ResourceOptions(parent=self, provider=self.gcp_provider)
        network = gcp.compute.Network(f"{name}-network", project=project, auto_create_subnetworks=False, opts=child)
        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet", project=project, region=region, network=network.id,
            ip_cidr_range=args.get("subnet_cidr", "10.10.0.0/20"), private_ip_google_access=True,
            secondary_ip_ranges=[{"range_name": "pods", "ip_cidr_range": "10.16.0.0/14"},
                                 {"range_name": "services", "ip_cidr_range": "10.20.0.0/20"}], opts=child)
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster", name=args["name"], project=project, location=region,
            network=network.id, subnetwork=subnet.id, remove_default_node_pool=True, initial_node_count=1,
            min_master_version=args["kubernetes_version"], release_channel={"channel": "REGULAR"},
            deletion_protection=args.get("deletion_protection", False),
            ip_allocation_policy={"cluster_secondary_range_name": "pods", "services_secondary_range_name": "services"},
            workload_identity_config={"workload_pool": f"{project}.svc.id.goog"},
            addons_config={"gcp_filestore_csi_driver_config": {"enabled": True},
                           "gce_persistent_disk_csi_driver_config": {"enabled": True}},
            opts=child)
        node_opts = ResourceOptions.merge(child, ResourceOptions(ignore_changes=["initialNodeCount"]))
        system = gcp.container.NodePool(
            f"{name}-system", name="modelplane-system", project=project, location=region,
            cluster=self.cluster.name,
            node_count=1, management={"auto_repair": True, "auto_upgrade": True},
            node_config={"machine_type": args.get("system_machine_type", "e2-standard-4"), "oauth_scopes": SCOPES,
                         "workload_metadata_config": {"mode": "GKE_METADATA"}}, opts=child)
        self.node_pools = {pool["name"]: self._gpu_pool(name, project, region, pool, node_opts)
                           for pool in args["pools"]}

        endpoint, ca = self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(endpoint, ca).apply(
            lambda values: gke_kubeconfig(args["name"], values[0], values[1])))
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self, depends_on=[system]))
        rwx_storage_class(name, self.storage_class_name, "filestore.csi.storage.gke.io",
                          {"tier": args.get("filestore_tier", "standard"), "network": network.name},
                          self.provider, self, self.cluster)
        installer = args.get("driver_installer", DRIVER_INSTALLER)
        if installer:
            k8s.yaml.v2.ConfigFile(f"{name}-nvidia-driver", file=installer,
                                   opts=ResourceOptions(parent=self, provider=self.provider, deleted_with=self.cluster))
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig, "endpoint": endpoint})

    def _gpu_pool(self, name: str, project: str, region: str, pool: MachinePoolArgs,
                  opts: ResourceOptions) -> gcp.container.NodePool:
        zones = list(pool["zones"])
        per_zone = -(-pool["node_count"] // max(len(zones), 1))
        return gcp.container.NodePool(
            pool_name(name, pool["name"]), name=pool["name"], project=project, location=region,
            cluster=self.cluster.name, node_locations=zones or None, initial_node_count=per_zone,
            autoscaling={"total_min_node_count": pool["min_node_count"],
                         "total_max_node_count": pool["max_node_count"], "location_policy": "ANY"},
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={
                "machine_type": pool["machine_type"], "disk_size_gb": pool["disk_size_gb"],
                "image_type": "COS_CONTAINERD", "oauth_scopes": SCOPES,
                "workload_metadata_config": {"mode": "GKE_METADATA"},
                "labels": {**pool_labels(pool["name"], pool["accelerator_type"]), **GKE_DRA_LABELS},
                "guest_accelerators": [{
                    "type": pool["accelerator_type"], "count": pool["accelerator_count"],
                    "gpu_driver_installation_config": {"gpu_driver_version": "INSTALLATION_DISABLED"}}]},
            opts=aliased(opts, *legacy_pool_name(name, pool["name"])))
