"""Issue 15: the cluster and provisioning fields of AKS, Nebius, Vultr, EKS Capacity Blocks, credentials
and existing clusters by Secret load as the Crossplane-based Modelplane publishes them, and each
wrong type, missing field or wrong-cloud block is reported as `FILE:LINE: KIND NAME: PATH: message`.

Each bad case edits one line of a good fleet (one class and one cluster per cloud) and names the
problem line it must produce; field names, types and defaults come from the published API (v0.3.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelplane.api import load_sources
from modelplane.cli import main

CLASSES = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: aks-h100}
spec:
  provisioning:
    provider: AKS
    aks: {vmSize: Standard_ND96isr_H100_v5, diskSizeGb: 200, accelerator: {type: nvidia-h100, count: 8}}
  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8}]
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: nebius-h100}
spec:
  provisioning:
    provider: Nebius
    nebius: {platform: gpu-h100-sxm, preset: 8gpu-128vcpu-1600gb, driversPreset: cuda13.0, accelerator: {type: nvidia-h100, count: 8}}
  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8}]
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: vultr-l40s}
spec:
  provisioning:
    provider: Vultr
    vultr: {plan: vcg-l40s-16c-180g-48vram, accelerator: {type: nvidia-l40s, count: 1}}
  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com}]
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: eks-h200}
spec:
  provisioning:
    provider: EKS
    eks: {instanceType: p5en.48xlarge, accelerator: {type: nvidia-h200, count: 8}}
  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8}]
"""

CLUSTERS = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: aks-a}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster:
    source: AKS
    aks: {location: westeurope, kubernetesVersion: "1.34", credentials: {type: ProviderConfig, name: azure-prod}}
  nodePools:
  - {name: gpuh100, className: aks-h100, nodeCount: 1, minNodeCount: 1, maxNodeCount: 4, zones: ["1"]}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: nebius-a}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster:
    source: Nebius
    nebius: {}
  nodePools:
  - {name: gpu-h100, className: nebius-h100, nodeCount: 0, maxNodeCount: 2, fabric: {type: InfiniBand, infiniband: {fabric: fabric-2}}}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: vultr-a}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster:
    source: Vultr
    vultr: {region: ewr}
  nodePools:
  - {name: gpu-l40s, className: vultr-l40s, nodeCount: 1, maxNodeCount: 3}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: eks-a}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster:
    source: EKS
    eks: {region: us-east-2}
  nodePools:
  - {name: gpu-h200, className: eks-h200, nodeCount: 2, zones: [us-east-2b], capacityBlock: {capacityReservationId: cr-0123456789abcdef0}}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: byo-a}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster:
    source: Existing
    existing:
      secretRef: {name: byo-cluster-kubeconfig}
      identitySecretRef: {name: byo-sa, key: credentials.json, type: NebiusServiceAccountCredentials}
      cache: {storageClassName: nfs-rwx}
  nodePools:
  - {name: gpu-h100, className: aks-h100, nodeCount: 2}
"""


def swap(old: str, new: str, text: str = CLUSTERS) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_the_good_fleet_loads_with_the_published_defaults() -> None:
    manifests = load_sources([("classes.yaml", CLASSES), ("clusters.yaml", CLUSTERS)])
    assert manifests.warnings == ()
    clusters = {cluster.name: cluster.spec.cluster for cluster in manifests.fleet.clusters}
    assert clusters["aks-a"].aks is not None and clusters["aks-a"].aks.credentials.name == "azure-prod"
    assert clusters["nebius-a"].nebius is not None and clusters["nebius-a"].nebius.kubernetes_version == "1.34"
    assert clusters["nebius-a"].nebius.credentials.name == "default"
    assert clusters["vultr-a"].vultr is not None and clusters["vultr-a"].vultr.kubernetes_version == "v1.36.1+3"
    existing = clusters["byo-a"].existing
    assert existing is not None and existing.secret_ref is not None and existing.secret_ref.key == "kubeconfig"
    assert existing.rwx_storage_class == "nfs-rwx"
    nebius = manifests.fleet.inference_class("nebius-h100")
    assert nebius is not None and nebius.spec.provisioning is not None and nebius.spec.provisioning.nebius is not None
    assert nebius.spec.provisioning.nebius.disk_size_gb == 100
    eks = manifests.fleet.cluster("eks-a")
    assert eks is not None and eks.spec.node_pools[0].capacity == 2, "a Capacity Block pool counts its nodes"


@dataclass
class Bad:
    name: str
    clusters: str
    want: str
    """A fragment of the problem line, from the field path on."""
    classes: str = CLASSES


CASES = [
    Bad("source AKS without its block", swap("    aks: {location: westeurope, kubernetesVersion: \"1.34\", credentials: "
                                             "{type: ProviderConfig, name: azure-prod}}\n", ""),
        "InferenceCluster aks-a: spec.cluster.aks: aks is required when source is AKS"),
    Bad("source AKS with a gke block", swap("    aks: {location:", "    gke: {region: us-central1}\n    aks: {location:"),
        "InferenceCluster aks-a: spec.cluster.gke: the gke block belongs to source GKE; source AKS takes the aks block"),
    Bad("source Vultr with an aks block", swap("    vultr: {region: ewr}", "    aks: {location: ewr}"),
        "InferenceCluster vultr-a: spec.cluster.aks: the aks block belongs to source AKS; source Vultr takes the vultr block"),
    Bad("aks without a location", swap("{location: westeurope, ", "{"),
        "InferenceCluster aks-a: spec.cluster.aks.location: location is required"),
    Bad("aks location as a number", swap("location: westeurope", "location: 5"),
        "spec.cluster.aks.location: expected a string, got int 5"),
    Bad("aks location over 32 characters", swap("location: westeurope", f"location: {'w' * 33}"),
        "spec.cluster.aks.location: must be at most 32 characters; got 33"),
    Bad("aks kubernetesVersion with a patch", swap('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.34.2"'),
        "spec.cluster.aks.kubernetesVersion: '1.34.2' does not match the required pattern"),
    Bad("an unknown credentials type", swap("type: ProviderConfig", "type: Secret"),
        "spec.cluster.aks.credentials.type: must be one of 'ProviderConfig' or 'ClusterProviderConfig'; got 'Secret'"),
    Bad("an empty credentials name", swap("name: azure-prod", "name: ''"),
        "spec.cluster.aks.credentials.name: '' is not a DNS subdomain"),
    Bad("an unknown credentials field", swap("name: azure-prod}", "name: azure-prod, namespace: x}"),
        "spec.cluster.aks.credentials.namespace: unknown field 'namespace'; allowed here: name, type"),
    Bad("an AKS pool name with a dash", swap("name: gpuh100,", "name: gpu-h100,"),
        "InferenceCluster aks-a: spec.nodePools[0].name: 'gpu-h100' cannot name an AKS node pool: use 1-12 lowercase "
        "letters and digits, starting with a letter"),
    Bad("a nebius kubernetesVersion as a number", swap("nebius: {}", "nebius: {kubernetesVersion: 1.34}"),
        "spec.cluster.nebius.kubernetesVersion: expected a string, got float 1.34 (quote it to make it a string)"),
    Bad("a nebius region", swap("nebius: {}", "nebius: {region: eu-north1}"),
        "spec.cluster.nebius.region: unknown field 'region'; allowed here: credentials, kubernetesVersion"),
    Bad("a Nebius InfiniBand pool without its fabric", swap(", infiniband: {fabric: fabric-2}}", "}"),
        "InferenceCluster nebius-a: spec.nodePools[0].fabric.infiniband: infiniband.fabric is required when fabric.type "
        "is InfiniBand on Nebius"),
    Bad("vultr without a region", swap("vultr: {region: ewr}", "vultr: {}"),
        "spec.cluster.vultr.region: region is required"),
    Bad("a vultr version without its build", swap("vultr: {region: ewr}", "vultr: {region: ewr, kubernetesVersion: '1.36'}"),
        "spec.cluster.vultr.kubernetesVersion: '1.36' is not a VKE version: Vultr needs the exact version with its build "
        "suffix, e.g. v1.36.1+3"),
    Bad("a capacity block on AKS", swap("zones: [\"1\"]}", "zones: [\"1\"], capacityBlock: {capacityReservationId: cr-0a}}"),
        "InferenceCluster aks-a: spec.nodePools[0].capacityBlock: capacityBlock is for EKS clusters (EC2 Capacity Blocks "
        "for ML), not source AKS"),
    Bad("a capacity reservation id that is not one", swap("cr-0123456789abcdef0", "reservation-1"),
        "spec.nodePools[0].capacityBlock.capacityReservationId: 'reservation-1' does not match the required pattern ^cr-[0-9a-f]+$"),
    Bad("a capacity block without its id", swap("capacityBlock: {capacityReservationId: cr-0123456789abcdef0}",
                                                "capacityBlock: {}"),
        "spec.nodePools[0].capacityBlock.capacityReservationId: capacityReservationId is required"),
    Bad("a capacity block over two zones", swap("zones: [us-east-2b]", "zones: [us-east-2a, us-east-2b]"),
        "InferenceCluster eks-a: spec.nodePools[0].zones: a Capacity Block is reserved in one Availability Zone: list "
        "that zone, and only it, in zones (got 2)"),
    Bad("an existing cluster with a key and a Secret", swap("      secretRef:", "      kubeconfig: byoKubeconfig\n      secretRef:"),
        "InferenceCluster byo-a: spec.cluster.existing.secretRef: set kubeconfig (a Pulumi secret config key) or "
        "secretRef (a Secret), not both"),
    Bad("an existing cluster without a kubeconfig", swap("      secretRef: {name: byo-cluster-kubeconfig}\n", ""),
        "spec.cluster.existing.kubeconfig: set kubeconfig (a Pulumi secret config key) or secretRef (a Secret), one of "
        "them is required"),
    Bad("a secretRef without a name", swap("secretRef: {name: byo-cluster-kubeconfig}", "secretRef: {key: config}"),
        "spec.cluster.existing.secretRef.name: name is required"),
    Bad("an empty secretRef key", swap("secretRef: {name: byo-cluster-kubeconfig}",
                                       "secretRef: {name: byo-cluster-kubeconfig, key: ''}"),
        "spec.cluster.existing.secretRef.key: must not be empty"),
    Bad("an unknown identity type", swap("type: NebiusServiceAccountCredentials", "type: AzureCredentials"),
        "spec.cluster.existing.identitySecretRef.type: must be one of 'GoogleApplicationCredentials', "
        "'AWSWebIdentityCredentials' or 'NebiusServiceAccountCredentials'; got 'AzureCredentials'"),
    Bad("two storage classes", swap("      cache: {storageClassName: nfs-rwx}", "      storageClassName: nfs\n      "
                                    "cache: {storageClassName: nfs-rwx}"),
        "spec.cluster.existing.cache.storageClassName: set storageClassName or cache.storageClassName, not both"),
    Bad("a cache storage class that is not a name", swap("storageClassName: nfs-rwx", "storageClassName: NFS_RWX"),
        "spec.cluster.existing.cache.storageClassName: 'NFS_RWX' is not a DNS subdomain"),
    Bad("provider Nebius without its block", CLUSTERS, "InferenceClass nebius-h100: spec.provisioning.nebius: nebius is "
        "required when provider is Nebius", classes=swap("    nebius: {platform: gpu-h100-sxm, preset: 8gpu-128vcpu-1600gb, "
                                                           "driversPreset: cuda13.0, accelerator: {type: nvidia-h100, "
                                                           "count: 8}}\n", "", CLASSES)),
    Bad("provider Vultr with an aks block", CLUSTERS, "InferenceClass vultr-l40s: spec.provisioning.aks: the aks block "
        "belongs to provider AKS; provider Vultr takes the vultr block",
        classes=swap("    vultr: {plan:", "    aks: {vmSize: x, accelerator: {type: a, count: 1}}\n    vultr: {plan:", CLASSES)),
    Bad("a nebius class without a preset", CLUSTERS, "spec.provisioning.nebius.preset: preset is required",
        classes=swap("preset: 8gpu-128vcpu-1600gb, ", "", CLASSES)),
    Bad("a nebius drivers preset as a number", CLUSTERS, "spec.provisioning.nebius.driversPreset: expected a string, "
        "got float 13.0", classes=swap("driversPreset: cuda13.0", "driversPreset: 13.0", CLASSES)),
    Bad("a vultr class without a plan", CLUSTERS, "spec.provisioning.vultr.plan: plan is required",
        classes=swap("plan: vcg-l40s-16c-180g-48vram, ", "", CLASSES)),
    Bad("a vultr class with a disk size", CLUSTERS, "spec.provisioning.vultr.diskSizeGb: unknown field 'diskSizeGb'; "
        "allowed here: accelerator, plan", classes=swap("vultr: {plan:", "vultr: {diskSizeGb: 100, plan:", CLASSES)),
    Bad("an empty aks vmSize", CLUSTERS, "spec.provisioning.aks.vmSize: must not be empty",
        classes=swap("vmSize: Standard_ND96isr_H100_v5", "vmSize: ''", CLASSES)),
    Bad("an aks disk under 10 GB", CLUSTERS, "spec.provisioning.aks.diskSizeGb: must be at least 10; got int 5",
        classes=swap("diskSizeGb: 200", "diskSizeGb: 5", CLASSES)),
    Bad("a Nebius cluster's pool on a Vultr class", swap("className: nebius-h100", "className: vultr-l40s"),
        "InferenceCluster nebius-a: spec.nodePools[0].className: InferenceClass 'vultr-l40s' has no provisioning for "
        "Nebius: a Nebius cluster creates its pools from the class's spec.provisioning.nebius"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_bad_cloud_field_is_reported_cleanly(case: Bad, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "classes.yaml").write_text(case.classes)
    (tmp_path / "clusters.yaml").write_text(case.clusters)
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if case.want in line]
    assert lines, f"no line contains {case.want!r}:\n{err}"
    assert re.match(re.escape(str(tmp_path)) + r"/(classes|clusters)\.yaml:[1-9]\d*: ", lines[0]), lines[0]


def test_zones_on_a_zoneless_cloud_are_a_warning() -> None:
    manifests = load_sources([("classes.yaml", CLASSES), ("clusters.yaml", swap(
        "nodeCount: 1, maxNodeCount: 3}", "nodeCount: 1, maxNodeCount: 3, zones: [ewr-1]}"))])
    assert [str(warning) for warning in manifests.warnings] == [
        "clusters.yaml:32: warning: InferenceCluster vultr-a: spec.nodePools[0].zones: Vultr pools have no zones; "
        "these are not used"]
