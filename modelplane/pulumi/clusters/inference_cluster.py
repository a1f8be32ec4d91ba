"""`InferenceCluster`: one cluster of the fleet, built by its cloud's module from its manifest.

`spec.cluster.source` picks the module (`CLOUD_MODULES`); each module exposes
`build(name, manifest, inputs, opts)`, which returns a component that keeps the contract of
`contract.py`. A module, and with it its cloud's SDK, is imported only when a cluster of its source
is built; a cloud whose SDK is not installed is an error naming the extra to install. The
cluster's credentials set (`credentials.name` of its cloud block) is resolved here:
`provider_settings` says which settings an explicit provider gets, and a name the stack does not
define is an error that names the config key.

`spec.deletionPolicy: Orphan` marks every resource of the cluster `retain_on_delete` (a resource
transformation on the component, so each cloud's module needs nothing for it): when the
InferenceCluster leaves the manifests, Pulumi forgets the cloud cluster, its node pools and network
instead of deleting them, and the workloads `deleted_with` it stay on it. GKE and EKS also get their
own deletion protection (`deletion_protection` of their args), which refuses a delete from anywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
from pulumi import ResourceOptions

from modelplane.api import ClusterSource, Fleet
from modelplane.api.fleet import DeletionPolicy
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.io.extras import missing
from modelplane.pulumi.clusters.contract import RWX_STORAGE_CLASS, ClusterComponent, ProviderSettings
from modelplane.pulumi.names import config_path

CLOUD_MODULES = {
    ClusterSource.GKE: "gke", ClusterSource.EKS: "eks", ClusterSource.AKS: "aks",
    ClusterSource.NEBIUS: "nebius", ClusterSource.VULTR: "vultr", ClusterSource.EXISTING: "existing",
}
"""Source -> the module of `modelplane.pulumi.clusters` that builds such a cluster."""
DEFAULT_CREDENTIALS = "default"


class InferenceClusterArgs(TypedDict):
    cluster: ClusterManifest
    """The validated InferenceCluster manifest; `spec.cluster.source` picks the cloud."""
    fleet: Fleet
    """The fleet it belongs to: provisioned pools are created from their InferenceClass's
    `spec.provisioning` (machine shape, accelerator, disk)."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """Existing clusters only (required there): the kubeconfig, normally read from the secret
    config key or Secret the manifest names."""
    credentials: NotRequired[Mapping[str, ProviderSettings]]
    """Credentials sets by name: the arguments of the explicit cloud provider a cluster whose
    `credentials.name` is that name gets. Default: none; a cluster whose set is `default` and not
    defined here uses the stack's ambient provider configuration, any other name is an error."""
    gcp_project: NotRequired[str | None]
    """GKE clusters only: the project when the manifest names none (stack config `gcp:project`).
    Default: None, which is an error for a GKE cluster whose manifest names no project."""
    rwx_storage_class: NotRequired[str]
    """Provisioned clusters only: the name of the ReadWriteMany StorageClass to create where the
    cloud offers one; it must be the one compose puts in ModelCache volumes
    (`compose.Settings.<cloud>_rwx_storage_class`). Default: `modelplane-rwx`."""
    pool_nodes: NotRequired[pulumi.Input[Mapping[str, int]]]
    """Pool -> the nodes the placement holds on it (`Modelplane` passes the FleetPlacement's); EKS
    node groups are sized to it. Default: none held, so each pool keeps its floor."""


def provider_settings(cluster: ClusterManifest, credentials: Mapping[str, ProviderSettings]) -> ProviderSettings | None:
    """The settings of the credentials set `cluster` names, None for the ambient configuration, or a
    ValueError naming the stack config key to set."""
    block = cluster.spec.cluster.provisioned
    if block is None:
        return None
    name = block.credentials.name
    if name in credentials:
        return credentials[name]
    if name == DEFAULT_CREDENTIALS:
        return None
    cloud = str(cluster.spec.cluster.source).lower()
    raise ValueError(f"InferenceCluster {cluster.name}: spec.cluster.{cloud}.credentials.name {name!r} names no "
                     f"credentials set; define it in stack config: pulumi config set --secret --path "
                     f"'{config_path('modelplane', 'credentials', name, '<setting>')}' <value>")


class InferenceCluster(ClusterComponent):
    """A GPU cluster of the fleet, built from its InferenceCluster manifest on its cloud or reached by kubeconfig."""

    def __init__(self, name: str, args: InferenceClusterArgs, opts: ResourceOptions | None = None):
        manifest = args["cluster"]
        if manifest.spec.deletion_policy is DeletionPolicy.ORPHAN:
            opts = ResourceOptions.merge(opts, ResourceOptions(transformations=[_retained]))
        super().__init__("modelplane:index:InferenceCluster", name, {}, opts)
        cloud = CLOUD_MODULES[manifest.spec.cluster.source]
        try:
            module = importlib.import_module(f"modelplane.pulumi.clusters.{cloud}")
        except ModuleNotFoundError as error:
            advice = missing(error, f"InferenceCluster {manifest.name} ({cloud})")
            if advice is None:
                raise
            raise pulumi.RunError(advice) from None
        built: ClusterComponent = module.build(name, manifest, {
            "fleet": args["fleet"], "rwx_storage_class": args.get("rwx_storage_class", RWX_STORAGE_CLASS),
            "provider_settings": provider_settings(manifest, args.get("credentials", {})),
            "gcp_project": args.get("gcp_project"), "kubeconfig": args.get("kubeconfig"),
            "pool_nodes": args.get("pool_nodes", {})},
            ResourceOptions(parent=self))
        self.kubeconfig = built.kubeconfig
        self.provided_by(lambda: built.provider)
        self.storage_class_name = built.storage_class_name
        self.anchor = built.anchor
        self.register_outputs({"kubeconfig": self.kubeconfig})


def _retained(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult:
    """Every resource under an Orphan cluster is kept in the cloud when Pulumi deletes it."""
    return pulumi.ResourceTransformationResult(args.props, ResourceOptions.merge(
        args.opts, ResourceOptions(retain_on_delete=True)))
