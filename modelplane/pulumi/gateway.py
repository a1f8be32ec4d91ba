"""The fleet gateway: one OpenAI-compatible front door on the cluster the InferenceGateway names.

Without `spec.cluster` that is the control cluster (`api.CONTROL_CLUSTER`, control-cluster mode): the
caller passes its provider and its stack of the backend's add-ons (`fleet.control_serving_stack`).

The component registers the fleet `Gateway` (the gateway backend's object, `compose.gateways`: Envoy
Gateway's `modelplane` class or Traefik's `traefik` class; on the gateway cluster's provider, after
that cluster's serving stack, which installs the backend) and exposes its address and each
ModelService's URL: `https://<hostname or address>[:port]/<namespace>/<service>/` (`http://` with
`plainHTTP`), under which the
OpenAI paths (`/v1/chat/completions`, `/v1/models`, ...) pass through. The ModelService routes and
what they point at depend on the placement, so `workloads.register_placed` registers them as
children of this component. A service whose selectors match no endpoint keeps its URL but answers
404 until one does (compose warns about it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import InferenceGateway as GatewayManifest
from modelplane.api import ModelService
from modelplane.compose import replica_path
from modelplane.compose.gateways import backend
from modelplane.pulumi.kube import GatewayObject
from modelplane.pulumi.names import aliased, legacy_manifest_name, manifest_name, scope


class InferenceGatewayArgs(TypedDict):
    gateway: GatewayManifest
    """The validated InferenceGateway manifest (cluster, backend, port, hostname, tls or plainHTTP)."""
    services: Sequence[ModelService]
    """The fleet's ModelServices, each published at `/<namespace>/<name>/`."""
    provider: k8s.Provider
    """The Kubernetes provider of the cluster the gateway runs on."""
    after: Sequence[pulumi.Resource]
    """What must exist first: that cluster's serving stack (the backend's proxy and GatewayClass)."""
    anchor: NotRequired[pulumi.Resource | None]
    """What the gateway's resources are `deleted_with` (its cluster). Default: None."""
    address: NotRequired[str | None]
    """The fleet Gateway's address when no controller writes one (stack config `gatewayAddresses`).
    Default: None (wait for the controller's)."""


class InferenceGateway(pulumi.ComponentResource):
    """The fleet's front door and the URL of every ModelService."""

    address: pulumi.Output[str]
    """The fleet Gateway's external address (IP or host name)."""
    urls: pulumi.Output[dict[str, str]]
    """ModelService `namespace/name` -> its URL on the fleet gateway."""
    gateway: GatewayObject
    """The fleet Gateway resource (ModelService routes attach to it)."""
    cluster: str
    """The cluster the gateway runs on."""

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:InferenceGateway", name, {}, opts)
        manifest = args["gateway"]
        spec = manifest.spec
        self.cluster = manifest.host
        fleet_gateway = backend(manifest).gateway_object(manifest, [s.namespace for s in args["services"]])
        self.gateway = GatewayObject(manifest_name(scope(name, self.cluster), fleet_gateway), fleet_gateway, aliased(
            ResourceOptions(parent=self, provider=args["provider"], depends_on=list(args["after"]),
                            deleted_with=args.get("anchor")), legacy_manifest_name(self.cluster, fleet_gateway)),
            args.get("address"))
        self.address = self.gateway.address()
        scheme = "https" if spec.tls else "http"
        port = "" if manifest.port == {"http": 80, "https": 443}[scheme] else f":{manifest.port}"
        paths = {f"{s.namespace}/{s.name}": replica_path(s.namespace, s.name) for s in args["services"]}
        host = pulumi.Output.from_input(spec.hostname) if spec.hostname else self.address
        self.urls = host.apply(lambda at: {key: f"{scheme}://{at}{port}{path}" for key, path in sorted(paths.items())})
        self.register_outputs({"address": self.address, "urls": self.urls})
