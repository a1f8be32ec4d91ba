"""GPU clusters of the fleet: one contract (`contract.py`), one module per cloud, and `InferenceCluster`.

`InferenceCluster` builds a cluster from its manifest with the module its `spec.cluster.source`
names: `gke.GkeCluster` (pulumi-gcp), `eks.EksCluster` (pulumi-aws), `aks.AksCluster`
(pulumi-azure-native), `nebius.NebiusCluster` (pulumi-nebius), `vultr.VultrCluster` (ediri-vultr)
or `existing.ExistingCluster`. Each exposes `kubeconfig` (secret), `provider`, `storage_class_name`
and `anchor`. The cloud modules are not imported here: import one directly
(`from modelplane.pulumi.clusters.aks import AksCluster`) to build its component yourself; a program
that never does, and builds no cluster of that cloud, never imports that cloud's SDK. Adding a cloud
means adding its module and its line in `inference_cluster.CLOUD_MODULES`.
"""

from modelplane.pulumi.clusters.contract import (
    ClusterComponent,
    GpuPoolArgs,
    MachinePoolArgs,
    ProviderSettings,
)
from modelplane.pulumi.clusters.existing import ExistingCluster, ExistingClusterArgs
from modelplane.pulumi.clusters.inference_cluster import (
    CLOUD_MODULES,
    InferenceCluster,
    InferenceClusterArgs,
    provider_settings,
)

__all__ = [
    "CLOUD_MODULES", "ClusterComponent", "ExistingCluster", "ExistingClusterArgs", "GpuPoolArgs", "InferenceCluster",
    "InferenceClusterArgs", "MachinePoolArgs", "ProviderSettings", "provider_settings",
]
