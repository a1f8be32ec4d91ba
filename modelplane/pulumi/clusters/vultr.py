"""A Vultr Kubernetes Engine (VKE) cluster for GPU inference (ediri-vultr): cluster and GPU node pools.

What it builds, and why each setting:
- An explicit `vultr` provider with the settings of the cluster's credentials set (`api_key`), or
  the stack's ambient configuration (`vultr:apiKey`, `VULTR_API_KEY`).
- The cluster with highly available control planes, VKE's managed firewall, the exact version the
  manifest names (VKE needs the build suffix) and a small inline system pool for the serving
  stack's controllers. VKE honours changes to the inline pool only at creation, so later
  differences in it are ignored rather than planned.
- One node pool per GPU pool from its class's `provisioning.vultr`: the plan (which fixes GPUs,
  vCPUs, memory and disk), node labels, the `nvidia.com/gpu=true:NoSchedule` taint, and VKE's own
  autoscaler between the pool's floor and ceiling when they differ. VKE preinstalls the NVIDIA GPU
  Operator on GPU nodes (driver and container toolkit); the serving stack adds the NVIDIA DRA
  driver, which hands GPUs to Modelplane's pods. Vultr has no zones to pin a pool to.
- The kubeconfig VKE returns (base64, with client certificates), decoded.

No ReadWriteMany StorageClass: VKE's Vultr File System class does not attach to GPU nodes, so a
ModelCache on a Vultr cluster is warned about at plan time (`storage_class_name` is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import ediri_vultr as vultr
import pulumi
from pulumi import ResourceOptions

from modelplane.api import Fleet
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import (
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    ClusterComponent,
    ClusterInputs,
    GpuPoolArgs,
    ProviderSettings,
    explicit_provider,
    gpu_pool,
    kubernetes_provider,
    pool_labels,
    provisioned_pools,
)
from modelplane.pulumi.clusters.kubeconfig import decoded_kubeconfig
from modelplane.pulumi.names import aliased, legacy_pool_name, pool_name


class VultrPoolArgs(GpuPoolArgs):
    plan: str
    """The Vultr plan of the pool's nodes (vcg-l40s-16c-180g-48vram)."""


class VultrClusterArgs(TypedDict):
    name: str
    """The VKE cluster label (the InferenceCluster's name)."""
    region: str
    """The Vultr region, e.g. ewr."""
    kubernetes_version: str
    """The exact VKE version, e.g. v1.36.1+3."""
    pools: Sequence[VultrPoolArgs]
    """The GPU node pools."""
    provider_settings: NotRequired[ProviderSettings | None]
    """Arguments of an explicit `vultr` provider (a named credentials set: `api_key`). Default: None,
    the ambient Vultr configuration."""
    system_plan: NotRequired[str]
    """Plan of the inline system pool (1-2 nodes). Default: vc2-6c-16gb."""


def vultr_args(cluster: ClusterManifest, fleet: Fleet) -> VultrClusterArgs:
    """VultrClusterArgs from a validated Vultr InferenceCluster."""
    block = present(cluster.spec.cluster.vultr,
                    f"validated: InferenceCluster {cluster.name}, a Vultr cluster, has a vultr block")
    pools: list[VultrPoolArgs] = []
    for pool, shape in provisioned_pools(cluster, fleet, lambda provisioning: provisioning.vultr):
        pools.append({**gpu_pool(pool, shape.accelerator), "plan": shape.plan})
    return {"name": cluster.name, "region": block.region, "kubernetes_version": block.kubernetes_version,
            "pools": pools}


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> VultrCluster:
    return VultrCluster(f"{name}-vultr", {**vultr_args(manifest, inputs["fleet"]),
                                          "provider_settings": inputs["provider_settings"]}, opts)


class VultrCluster(ClusterComponent):
    """A VKE cluster with NVIDIA GPU node pools and a kubeconfig; no ReadWriteMany class."""

    vultr_provider: vultr.Provider | None
    """The explicit provider of the cluster's credentials set, or None (ambient configuration)."""
    cluster: vultr.Kubernetes
    node_pools: dict[str, vultr.KubernetesNodePools]
    """GPU node pools by pool name."""

    def __init__(self, name: str, args: VultrClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:VultrCluster", name, {}, opts)
        self.storage_class_name = None
        self.vultr_provider = explicit_provider(vultr.Provider, f"{name}-vultr", args.get("provider_settings"), self)
        child = ResourceOptions(parent=self, provider=self.vultr_provider)
        self.cluster = vultr.Kubernetes(
            f"{name}-cluster", label=args["name"], region=args["region"], version=args["kubernetes_version"],
            ha_controlplanes=True, enable_firewall=True,
            node_pools={"label": "modelplane-system", "plan": args.get("system_plan", "vc2-6c-16gb"),
                        "node_quantity": 1, "auto_scaler": True, "min_nodes": 1, "max_nodes": 2},
            opts=ResourceOptions.merge(child, ResourceOptions(ignore_changes=["nodePools"])))
        self.node_pools = {pool["name"]: self._gpu_pool(name, pool, child) for pool in args["pools"]}
        self.kubeconfig = pulumi.Output.secret(self.cluster.kube_config.apply(
            lambda encoded: decoded_kubeconfig(args["name"], encoded)))
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self))
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig, "endpoint": self.cluster.endpoint})

    def _gpu_pool(self, name: str, pool: VultrPoolArgs, child: ResourceOptions) -> vultr.KubernetesNodePools:
        autoscales = pool["min_node_count"] != pool["max_node_count"]
        return vultr.KubernetesNodePools(
            pool_name(name, pool["name"]), cluster_id=self.cluster.id, label=pool["name"], plan=pool["plan"],
            node_quantity=pool["node_count"], auto_scaler=autoscales,
            min_nodes=pool["min_node_count"] if autoscales else None,
            max_nodes=pool["max_node_count"] if autoscales else None,
            labels=pool_labels(pool["name"], pool["accelerator_type"]),
            taints=[{"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": "NoSchedule"}],
            opts=aliased(ResourceOptions.merge(
                child, ResourceOptions(ignore_changes=["nodeQuantity"] if autoscales else [])),
                *legacy_pool_name(name, pool["name"])))
