"""Modelplane's Pulumi components: GPU clusters, serving stacks, the placement, workloads, routing.

Import what you need into your own Pulumi program:

    from modelplane.api import load
    from modelplane.pulumi import Modelplane

    fleet = Modelplane("modelplane", {"manifests": load(["fleet/"]), "gcp_project": "my-project"})
    pulumi.export("urls", fleet.service_urls)

Components (typed Args, documented outputs, children parented to the component):
- `Modelplane`: the whole fleet from loaded manifests (what `__main__.py` uses).
- `InferenceCluster`: one cluster from its manifest, built by its cloud's module in
  `modelplane.pulumi.clusters` (GKE, EKS, AKS, Nebius, Vultr) or an `ExistingCluster`. All expose
  `kubeconfig` (secret), `provider`, `storage_class_name` and `anchor`.
- `ServingStack`: a cluster's add-ons as Helm releases and manifests, plus its inference Gateway.
- `InferenceGateway`: the fleet gateway and each ModelService's URL.
- `FleetPlacement`: the dynamic resource whose check() runs the scheduler with the previous
  placement from state (`PlacementProvider`).
- `ControlPlane`: the control cluster of an always-on fleet (the modelplane CRDs, the Pulumi
  Kubernetes Operator and the Stack it runs this program with). In control-cluster mode
  (`modelplane:source: cluster`) the program reads the objects there (`control_cluster`) and writes
  their status back on `up` (`status.FleetStatus`).
Each cloud's component lives in its own module of `modelplane.pulumi.clusters`, so a cloud's SDK is
imported only by programs that build such a cluster; `read_stack_config` maps stack config to
`ModelplaneArgs`. Nothing here decides placement or parses YAML: that is `modelplane.scheduling`
and `modelplane.api`.
"""

from modelplane.pulumi.clusters import (
    ClusterComponent,
    ExistingCluster,
    ExistingClusterArgs,
    GpuPoolArgs,
    InferenceCluster,
    InferenceClusterArgs,
)
from modelplane.pulumi.config import read_stack_config
from modelplane.pulumi.control_plane import ControlPlane, ControlPlaneArgs
from modelplane.pulumi.fleet import Modelplane, ModelplaneArgs
from modelplane.pulumi.gateway import InferenceGateway, InferenceGatewayArgs
from modelplane.pulumi.placement import FleetPlacement, FleetPlacementArgs, PlacementProvider, PlacementUnknownError
from modelplane.pulumi.serving import ServingStack, ServingStackArgs

__all__ = [
    "ClusterComponent", "ControlPlane", "ControlPlaneArgs", "ExistingCluster", "ExistingClusterArgs",
    "FleetPlacement", "FleetPlacementArgs",
    "GpuPoolArgs", "InferenceCluster", "InferenceClusterArgs", "InferenceGateway", "InferenceGatewayArgs",
    "Modelplane", "ModelplaneArgs", "PlacementProvider", "PlacementUnknownError", "ServingStack",
    "ServingStackArgs", "read_stack_config",
]
