"""The serving stack of one workload cluster (or of the control cluster): compose's add-ons, installed first.

Each `compose.Addon` becomes, by its `install`:
- HELM: a `kubernetes.helm.v3.Release` of the pinned chart version, named after the add-on (so the
  release name is stable), in its namespace (created if missing), with its values; an OCI chart is
  referenced as `oci://.../<chart>`, an HTTP repository through `repository_opts`.
- MANIFEST: a `kubernetes.yaml.v2.ConfigFile` of the release manifest URL (CRDs published that way).
- OBJECTS: the plain manifests, through `kube.kubernetes_object` (this is how the cluster's
  inference Gateway is created).
Add-ons are registered in compose's order and each depends on the add-ons it names in `depends_on`.
With `install_prerequisites=False` (stack config `servingStack`, for a cluster that already runs
Envoy Gateway, LeaderWorkerSet, the DRA driver and the CRDs they bring) only the OBJECTS add-ons,
modelplane's own namespace, GatewayClass and inference Gateway, are registered; dependencies on
skipped add-ons are dropped. With `skip_await=True` nothing but the Gateway waits for readiness.
The inference Gateway's address (an IP on GKE, a host name on EKS) is the `gateway_address` output,
which the fleet gateway routes to (`gateway_address` given: that address, without waiting). The control cluster's stack (`workload=False`, from
`compose.gateways.control_stack`, when the fleet gateway runs there) holds no inference Gateway:
its `gateway_address` is None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.compose import INFERENCE_GATEWAY, Addon, Install
from modelplane.invariants import InvariantError
from modelplane.pulumi.kube import GatewayObject, kubernetes_object
from modelplane.pulumi.names import aliased, legacy_manifest_name, manifest_name


class ServingStackArgs(TypedDict):
    cluster: str
    """The workload cluster's name (resource names start with it)."""
    addons: Sequence[Addon]
    """The cluster's serving stack, in install order (`compose.Rendered.addons[cluster]`)."""
    provider: k8s.Provider
    """The cluster's Kubernetes provider."""
    anchor: NotRequired[pulumi.Resource | None]
    """What the stack's resources are `deleted_with` (the cluster: deleting a cluster does not try to
    uninstall its add-ons first). Default: None."""
    install_prerequisites: NotRequired[bool]
    """False: the cluster already runs the charts and CRDs; register only modelplane's own objects.
    Default: True."""
    skip_await: NotRequired[bool]
    """True: Helm releases and objects do not wait for readiness (the Gateway still waits for its
    address). Default: False."""
    workload: NotRequired[bool]
    """False: the control cluster's stack, which holds no inference Gateway. Default: True (the stack
    must hold one)."""
    gateway_address: NotRequired[str | None]
    """The inference Gateway's address when no controller writes one (stack config
    `gatewayAddresses`): it does not wait for one. Default: None (wait for the controller's)."""


class ServingStack(pulumi.ComponentResource):
    """Helm releases, CRD manifests and the inference Gateway that every workload on a cluster needs."""

    gateway_address: pulumi.Output[str] | None
    """The external address (IP or host name) of the cluster's inference Gateway; None for the
    control cluster's stack."""
    addons: tuple[Addon, ...]
    """compose's add-ons for the cluster, in order (those skipped included)."""
    installed: dict[str, pulumi.Resource]
    """Each add-on's resource (the Helm release, the ConfigFile, or the last of its objects), by name."""

    def __init__(self, name: str, args: ServingStackArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:ServingStack", name, {}, opts)
        self.installed = {}
        self.addons = tuple(args["addons"])
        skip_await = args.get("skip_await", False)
        install = args.get("install_prerequisites", True)
        gateway: GatewayObject | None = None
        for addon in self.addons:
            if not install and addon.install is not Install.OBJECTS:
                continue
            after = [self.installed[dependency] for dependency in addon.depends_on if dependency in self.installed]
            options = ResourceOptions(parent=self, provider=args["provider"], depends_on=after,
                                      deleted_with=args.get("anchor"))
            if addon.install is Install.HELM:
                self.installed[addon.name] = self._release(name, addon, options, skip_await)
            elif addon.install is Install.MANIFEST:
                self.installed[addon.name] = k8s.yaml.v2.ConfigFile(f"{name}-{addon.name}", file=addon.manifest_url,
                                                                     skip_await=skip_await, opts=options)
            else:
                for manifest in addon.objects:
                    inference = manifest["kind"] == "Gateway" and manifest["metadata"]["name"] == INFERENCE_GATEWAY
                    created = kubernetes_object(manifest_name(name, manifest), manifest, aliased(
                        options, legacy_manifest_name(args["cluster"], manifest)), skip_await,
                        args.get("gateway_address") if inference else None)
                    if isinstance(created, GatewayObject) and manifest["metadata"]["name"] == INFERENCE_GATEWAY:
                        gateway = created
                    options = ResourceOptions.merge(options, ResourceOptions(depends_on=[created]))
                    self.installed[addon.name] = created
        workload = args.get("workload", True)
        if (gateway is not None) != workload:
            raise InvariantError(f"{name}: compose's serving stack of a workload cluster holds its inference Gateway, "
                                 "the control cluster's none")
        self.gateway_address = gateway.address() if gateway is not None else None
        self.register_outputs({"gatewayAddress": self.gateway_address} if self.gateway_address is not None else {})

    @staticmethod
    def _release(name: str, addon: Addon, options: ResourceOptions, skip_await: bool) -> k8s.helm.v3.Release:
        oci = addon.repository.startswith("oci://")
        return k8s.helm.v3.Release(
            f"{name}-{addon.name}", name=addon.name, chart=addon.chart_ref, version=addon.version,
            namespace=addon.namespace, create_namespace=True, values=dict(addon.values),
            repository_opts=None if oci else {"repo": addon.repository}, skip_await=skip_await, opts=options)
