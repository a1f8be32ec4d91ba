"""Where a cluster runs and how its pools are provisioned: one block per cloud, picked by a selector.

An InferenceCluster's `spec.cluster.source` (GKE, EKS, AKS, Nebius, Vultr or Existing) takes exactly
the `spec.cluster` block of the same name in lower case (`source: AKS` takes `aks:`), and an
InferenceClass's `spec.provisioning.provider` takes one provisioning block the same way. Any other
block is an error that names the block the selector takes. Field names, types and defaults are the
ones the Crossplane-based Modelplane publishes (v0.3.1), so its manifests load unchanged, plus our
own `existing.kubeconfig` (a Pulumi secret config key) beside its `existing.secretRef`.

What the blocks mean when a cluster is provisioned (credentials sets, kubeconfig Secrets, GPU
drivers) is the Pulumi layer's business; docs/clouds.md describes it per cloud.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from modelplane.api.base import (
    ClusterSource,
    CredentialsType,
    DNSSubdomain,
    FieldError,
    IdentityType,
    Model,
    NonEmptyStr,
    Provider,
    Str,
    bounded,
    checked_string,
)

_VKE_VERSION = re.compile(r"^v1\.\d+\.\d+\+\d+$")


def check_vke_version(version: str) -> str:
    if not _VKE_VERSION.fullmatch(version):
        raise ValueError(f"{version!r} is not a VKE version: Vultr needs the exact version with its build "
                         "suffix, e.g. v1.36.1+3 (list them with `vultr-cli kubernetes versions`)")
    return version


def check_aks_pool_name(name: str) -> str:
    """AKS names Linux node pools with 1-12 lowercase letters and digits, starting with a letter."""
    if not re.fullmatch(r"^[a-z][a-z0-9]{0,11}$", name):
        raise ValueError(f"{name!r} cannot name an AKS node pool: use 1-12 lowercase letters and digits, "
                         "starting with a letter (e.g. gpuh100)")
    return name


KubernetesVersion = Annotated[Str, Field(pattern=r"^1\.\d{2}$")]
VkeVersion = Annotated[Str, AfterValidator(check_vke_version), checked_string(None, _VKE_VERSION.pattern)]
PulumiConfigKey = Annotated[Str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
Region = Annotated[Str, Field(min_length=1, max_length=32)]
ShortName = Annotated[Str, Field(min_length=1, max_length=63)]


def only_the_chosen_block(selector: str, chosen: StrEnum, blocks: Mapping[StrEnum, tuple[str, Model | None]]) -> None:
    """The block `chosen` names is set and no other one: `source: AKS` takes `aks` and nothing else."""
    field = blocks[chosen][0]
    for value, (other, block) in blocks.items():
        if value is not chosen and block is not None:
            raise FieldError((other,), f"the {other} block belongs to {selector} {value}; {selector} {chosen} "
                                       f"takes the {field} block")
    if blocks[chosen][1] is None:
        raise FieldError((field,), f"{field} is required when {selector} is {chosen}")


# spec.cluster: where the cluster runs.

class Credentials(Model):
    """Which credentials provision the cluster: the set `name` in stack config
    (`modelplane:credentials.<name>`), or the stack's ambient provider configuration for the
    default set when config defines no set named `default`. `type` is kept for Crossplane-era
    manifests: both of its values name a set the same way."""

    type: CredentialsType = CredentialsType.CLUSTER_PROVIDER_CONFIG
    """Kept for Crossplane-era manifests: ProviderConfig and ClusterProviderConfig both name a credentials set the same
    way. Defaults to ClusterProviderConfig."""
    name: DNSSubdomain = "default"
    """The credentials set (stack config modelplane:credentials.<name>); `default` is the stack's ambient cloud
    configuration unless a set of that name is defined. Defaults to default."""


class ProvisionedCluster(Model):
    credentials: Credentials = Credentials()
    """Which credentials provision the cluster."""


class GkeCluster(ProvisionedCluster):
    region: Region
    """The GCP region of the regional cluster (e.g. us-central1)."""
    project: NonEmptyStr | None = None
    """The GCP project; default: stack config gcp:project."""
    kubernetes_version: KubernetesVersion = "1.34"
    """The Kubernetes minor version (1.NN). Defaults to 1.34."""


class EksAccessPolicy(StrEnum):
    """The EKS access policies an access entry can be given, cluster-wide."""

    VIEW = "AmazonEKSViewPolicy"
    EDIT = "AmazonEKSEditPolicy"
    ADMIN = "AmazonEKSAdminPolicy"
    CLUSTER_ADMIN = "AmazonEKSClusterAdminPolicy"


class EksAccessEntry(Model):
    principal_arn: Annotated[Str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/.+$")]
    """The IAM role or user (arn:aws:iam::<account>:role/<name>), e.g. the role CI assumes for `pulumi preview`."""
    policy: EksAccessPolicy
    """The access policy it gets, cluster-wide. A `pulumi preview` sends server-side dry runs of every object the
    stack manages, namespaces and cluster-scoped objects included, which Kubernetes authorizes like the writes they
    simulate: AmazonEKSClusterAdminPolicy."""


class EksCluster(ProvisionedCluster):
    region: Region
    """The AWS region (e.g. us-west-2)."""
    kubernetes_version: KubernetesVersion = "1.34"
    """The Kubernetes minor version (1.NN). Defaults to 1.34."""
    access_entries: Annotated[tuple[EksAccessEntry, ...], Field(max_length=16)] = ()
    """IAM principals besides the identity that runs `pulumi up` (which always gets cluster admin) that get an EKS
    access entry: a CI role that previews the stack, an on-call role (at most 16)."""


class AksCluster(ProvisionedCluster):
    location: Region
    """The Azure region, e.g. westeurope."""
    kubernetes_version: KubernetesVersion = "1.34"
    """The Kubernetes minor version (1.NN). Defaults to 1.34."""


class NebiusCluster(ProvisionedCluster):
    """Every field has a default (`nebius: {}`): the project, and so the region, is the credentials'."""

    kubernetes_version: KubernetesVersion = "1.34"
    """The Kubernetes minor version (1.NN). Defaults to 1.34."""


class VultrCluster(ProvisionedCluster):
    region: Region
    """The Vultr region, e.g. ewr."""
    kubernetes_version: VkeVersion = "v1.36.1+3"
    """The exact VKE version with its build suffix. Defaults to v1.36.1+3."""


class KubeconfigSecretRef(Model):
    name: Annotated[Str, Field(min_length=1, max_length=253)]
    """Name of the Secret, in namespace modelplane-system of the control cluster."""
    key: Annotated[Str, Field(min_length=1, max_length=253)] = "kubeconfig"
    """The key of the Secret that holds the kubeconfig. Defaults to kubeconfig."""


class IdentitySecretRef(Model):
    name: Annotated[Str, Field(min_length=1, max_length=253)]
    """Name of the Secret."""
    key: Annotated[Str, Field(min_length=1, max_length=253)] = "private_key"
    """The key of the Secret that holds the identity. Defaults to private_key."""
    type: IdentityType = IdentityType.GOOGLE_APPLICATION_CREDENTIALS
    """What the identity is: GoogleApplicationCredentials, AWSWebIdentityCredentials or
    NebiusServiceAccountCredentials. Defaults to GoogleApplicationCredentials."""


class ExistingCache(Model):
    storage_class_name: DNSSubdomain | None = None
    """A ReadWriteMany StorageClass on the cluster for ModelCache volumes."""


class ExistingCluster(Model):
    """A cluster reached by kubeconfig: from the Pulumi secret config key `kubeconfig` names, or from
    the Secret `secretRef` names (exactly one of the two)."""

    kubeconfig: PulumiConfigKey | None = None
    """Name of the Pulumi secret config key that holds the cluster's kubeconfig (never the value)."""
    secret_ref: KubeconfigSecretRef | None = None
    """The Secret (namespace modelplane-system) that holds the kubeconfig."""
    identity_secret_ref: IdentitySecretRef | None = None
    """A Secret with the cloud identity the kubeconfig's credential plugin authenticates as."""
    storage_class_name: DNSSubdomain | None = None
    """A ReadWriteMany StorageClass on the cluster for ModelCache volumes (or `cache.storageClassName`)."""
    cache: ExistingCache = ExistingCache()
    """Cache settings: cache.storageClassName is the Crossplane-era spelling of storageClassName."""

    @model_validator(mode="after")
    def _one_kubeconfig_and_one_storage_class(self) -> ExistingCluster:
        if (self.kubeconfig is None) == (self.secret_ref is None):
            both = self.kubeconfig is not None
            raise FieldError(("secretRef" if both else "kubeconfig",),
                             "set kubeconfig (a Pulumi secret config key) or secretRef (a Secret), "
                             + ("not both" if both else "one of them is required"))
        if self.storage_class_name is not None and self.cache.storage_class_name is not None:
            raise FieldError(("cache", "storageClassName"),
                             "set storageClassName or cache.storageClassName, not both")
        return self

    @property
    def rwx_storage_class(self) -> str | None:
        """The ReadWriteMany StorageClass named in either place, or None."""
        return self.storage_class_name or self.cache.storage_class_name


class ClusterSpec(Model):
    source: ClusterSource
    """Where the cluster runs: GKE, EKS, AKS, Nebius or Vultr (provisioned by the stack) or Existing (reached by
    kubeconfig); it takes the block of the same name in lower case."""
    gke: GkeCluster | None = None
    """The GKE cluster; only with source GKE."""
    eks: EksCluster | None = None
    """The EKS cluster; only with source EKS."""
    aks: AksCluster | None = None
    """The AKS cluster; only with source AKS."""
    nebius: NebiusCluster | None = None
    """The Nebius mk8s cluster; only with source Nebius."""
    vultr: VultrCluster | None = None
    """The Vultr VKE cluster; only with source Vultr."""
    existing: ExistingCluster | None = None
    """How to reach the existing cluster; only with source Existing."""

    @model_validator(mode="after")
    def _block_matches_source(self) -> ClusterSpec:
        only_the_chosen_block("source", self.source, {
            ClusterSource.GKE: ("gke", self.gke), ClusterSource.EKS: ("eks", self.eks),
            ClusterSource.AKS: ("aks", self.aks), ClusterSource.NEBIUS: ("nebius", self.nebius),
            ClusterSource.VULTR: ("vultr", self.vultr), ClusterSource.EXISTING: ("existing", self.existing)})
        return self

    @property
    def provisioned(self) -> GkeCluster | EksCluster | AksCluster | NebiusCluster | VultrCluster | None:
        """The block of a cluster the stack creates; None for an Existing one."""
        return self.gke or self.eks or self.aks or self.nebius or self.vultr


class CapacityBlock(Model):
    """An EC2 Capacity Block for ML the pool's nodes run in (EKS only)."""

    capacity_reservation_id: Annotated[Str, Field(min_length=4, max_length=64, pattern=r"^cr-[0-9a-f]+$")]
    """The EC2 capacity reservation id of the Capacity Block (cr-...)."""


# spec.provisioning of an InferenceClass: how a node of the class is created on each cloud.

class Accelerator(Model):
    type: ShortName
    """The cloud's accelerator name (e.g. nvidia-l4); also the nodes' modelplane.ai/gpu label."""
    count: bounded(1, 16)
    """Accelerators per node."""


class GkeProvisioning(Model):
    machine_type: NonEmptyStr
    """The GCE machine type (e.g. g2-standard-8)."""
    disk_size_gb: bounded(10, 65536) = 100
    """Boot disk size in GB. Defaults to 100."""
    accelerator: Accelerator
    """The GPUs each node carries."""


class EksProvisioning(Model):
    instance_type: NonEmptyStr
    """The EC2 instance type (e.g. p5.48xlarge)."""
    disk_size_gb: bounded(10, 65536) = 100
    """Root volume size in GB. Defaults to 100."""
    accelerator: Accelerator
    """The GPUs each node carries."""


class AksProvisioning(Model):
    vm_size: NonEmptyStr
    """The Azure VM size (Standard_ND96isr_H100_v5): it fixes the GPU model and count."""
    disk_size_gb: bounded(10, 65536) = 100
    """OS disk size in GB. Defaults to 100."""
    accelerator: Accelerator
    """The GPUs each node carries."""


class NebiusProvisioning(Model):
    platform: ShortName
    """The Nebius compute platform (gpu-h100-sxm)."""
    preset: ShortName
    """The platform's resource preset (8gpu-128vcpu-1600gb): GPUs, vCPUs and memory per node."""
    disk_size_gb: bounded(10, 65536) = 100
    """Boot disk size in GB. Defaults to 100."""
    drivers_preset: ShortName = "cuda13.0"
    """The NVIDIA driver stack mk8s preinstalls on the nodes (cuda12.4, cuda13.0); mk8s validates it."""
    accelerator: Accelerator
    """The GPUs each node carries."""


class VultrProvisioning(Model):
    plan: ShortName
    """The Vultr plan (vcg-l40s-16c-180g-48vram): it fixes the GPU model and count."""
    accelerator: Accelerator
    """The GPUs each node carries."""


class Provisioning(Model):
    provider: Provider
    """The cloud: GKE, EKS, AKS, Nebius or Vultr; it takes the block of the same name in lower case."""
    gke: GkeProvisioning | None = None
    """How a GKE node of the class is created; only with provider GKE."""
    eks: EksProvisioning | None = None
    """How an EKS node of the class is created; only with provider EKS."""
    aks: AksProvisioning | None = None
    """How an AKS node of the class is created; only with provider AKS."""
    nebius: NebiusProvisioning | None = None
    """How a Nebius node of the class is created; only with provider Nebius."""
    vultr: VultrProvisioning | None = None
    """How a Vultr node of the class is created; only with provider Vultr."""

    @model_validator(mode="after")
    def _block_matches_provider(self) -> Provisioning:
        only_the_chosen_block("provider", self.provider, {
            Provider.GKE: ("gke", self.gke), Provider.EKS: ("eks", self.eks), Provider.AKS: ("aks", self.aks),
            Provider.NEBIUS: ("nebius", self.nebius), Provider.VULTR: ("vultr", self.vultr)})
        return self

