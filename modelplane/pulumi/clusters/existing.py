"""A cluster the platform team already runs, reached by kubeconfig; the stack creates nothing cloud-side.

The kubeconfig comes from stack config (`modelplane.pulumi.config` reads the key the manifest's
`existing.kubeconfig` names, or the Secret its `existing.secretRef` names). The operators label each
GPU node with its pool (`modelplane.ai/pool=<pool>`). The component's `anchor` is None: the stack
did not create the cluster, so its workloads are deleted one by one on `pulumi destroy`.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import pulumi
from pulumi import ResourceOptions

from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import ClusterComponent, ClusterInputs, kubernetes_provider


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
    """A cluster you already run, reached by kubeconfig. Label its GPU nodes `modelplane.ai/pool=<pool>`."""

    def __init__(self, name: str, args: ExistingClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:ExistingCluster", name, {}, opts)
        self.kubeconfig = pulumi.Output.secret(args["kubeconfig"])
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self))
        self.storage_class_name = args.get("storage_class_name")
        self.anchor = None
        self.register_outputs({"kubeconfig": self.kubeconfig})


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> ExistingCluster:
    existing = present(manifest.spec.cluster.existing,
                       f"validated: InferenceCluster {manifest.name}, an Existing cluster, has an existing block")
    kubeconfig = inputs["kubeconfig"]
    if kubeconfig is None:
        where = (f"secret config key {existing.kubeconfig!r}" if existing.secret_ref is None
                 else f"Secret {existing.secret_ref.name!r}, key {existing.secret_ref.key!r}")
        raise ValueError(f"InferenceCluster {manifest.name}: an Existing cluster needs its kubeconfig ({where})")
    return ExistingCluster(f"{name}-existing", {"name": manifest.name, "kubeconfig": kubeconfig,
                                                "storage_class_name": existing.rwx_storage_class}, opts)
