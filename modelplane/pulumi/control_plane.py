"""`ControlPlane`: what a platform team installs once on the control cluster to make the fleet always-on.

No controller of ours: the Pulumi Kubernetes Operator runs this program continuously. The component
registers `compose.control_plane`'s manifests on the control cluster's provider:
- the modelplane CRDs (so ML teams `kubectl apply`, `scale` and `get` their objects there);
- the operator, from its pinned Helm chart (`settings.operator_chart` at `operator_version`, which
  brings the operator's own CRDs), unless `install_operator` is False (it runs already, or its
  chart cannot be downloaded where `pulumi up` runs);
- the namespace, the workspace's ServiceAccount and its bindings (`system:auth-delegator`, the
  modelplane reader and status writer, the kubeconfig Secrets);
- the operator's `Stack`, after the chart and the ServiceAccount, which runs the program in cluster
  mode every `settings.resync_seconds` from the workspace image (in the split layout, the fleet
  stack's and one per workload cluster, `compose.control_plane.stacks`).
The Secret the Stack takes its environment from (`settings.env_secret`: the passphrase or access
token, cloud credentials) is the platform team's to create; this component never sees its values.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api.crds import custom_resource_definitions
from modelplane.compose.control_plane import ControlPlaneSettings, access, stacks
from modelplane.pulumi.kube import kubernetes_object
from modelplane.pulumi.names import aliased, legacy_manifest_name, manifest_name


class ControlPlaneArgs(TypedDict):
    settings: NotRequired[ControlPlaneSettings]
    """The stack the operator runs, the workspace image, the backend and the Secret with its environment.
    Default: `ControlPlaneSettings()` (stack `fleet` on Pulumi Cloud, image `modelplane-workspace:0.1.0`)."""
    provider: NotRequired[k8s.Provider | None]
    """The control cluster's Kubernetes provider. Default: None (the ambient kubeconfig)."""
    install_operator: NotRequired[bool]
    """False: the Pulumi Kubernetes Operator (and its CRDs) is installed already; only the CRDs, the
    access objects and the Stack are registered. Default: True."""


class ControlPlane(pulumi.ComponentResource):
    """The control cluster: modelplane CRDs, the Pulumi Kubernetes Operator and the Stack it runs."""

    crds: dict[str, pulumi.CustomResource]
    """The modelplane CRDs by name (`modeldeployments.modelplane.ai`, ...)."""
    operator: k8s.helm.v3.Release | None
    """The operator's Helm release (None with `install_operator=False`)."""
    stack: pulumi.CustomResource
    """The operator's Stack object."""
    stack_name: str
    """The Stack object's name in `settings.namespace`: what `modelplane reconcile --stack` names."""
    cluster_stacks: dict[str, pulumi.CustomResource]
    """The split layout's workload Stack objects by cluster (`settings.clusters`); empty otherwise."""

    def __init__(self, name: str, args: ControlPlaneArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:ControlPlane", name, {}, opts)
        settings = args.get("settings", ControlPlaneSettings())
        child = ResourceOptions(parent=self, provider=args.get("provider"))

        self.crds = {crd["metadata"]["name"]: kubernetes_object(manifest_name(name, crd), crd,
                                                                aliased(child, legacy_manifest_name(name, crd)))
                     for crd in custom_resource_definitions()}
        self.operator = None
        if args.get("install_operator", True):
            self.operator = k8s.helm.v3.Release(
                f"{name}-operator", name="pulumi-kubernetes-operator", chart=settings.operator_chart,
                version=settings.operator_version, namespace=settings.operator_namespace, create_namespace=True,
                opts=child)
        granted: list[pulumi.Resource] = []
        namespace, *rest = access(settings)
        created = kubernetes_object(manifest_name(name, namespace), namespace,
                                    aliased(child, legacy_manifest_name(name, namespace)))
        for manifest in rest:
            after = ResourceOptions.merge(child, ResourceOptions(depends_on=[created]))
            granted.append(kubernetes_object(manifest_name(name, manifest), manifest,
                                             aliased(after, legacy_manifest_name(name, manifest))))
        after = ResourceOptions.merge(child, ResourceOptions(
            depends_on=[created, *granted, *([self.operator] if self.operator else [])]))
        fleet, *workload = stacks(settings)
        self.stack_name = fleet["metadata"]["name"]
        self.stack = kubernetes_object(manifest_name(name, fleet), fleet,
                                       aliased(after, legacy_manifest_name(name, fleet)))
        self.cluster_stacks = {manifest["spec"]["config"]["modelplane:cluster"]:
                               kubernetes_object(manifest_name(name, manifest), manifest, after) for manifest in workload}
        self.register_outputs({"stackName": self.stack_name})
