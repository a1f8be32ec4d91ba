"""What a fleet gateway backend receives from the routing model, and what it must provide.

`compose.routing` decides, per ModelService, which destinations its fleet route reaches, with what
weight, Host header and path; a backend (`envoy`, `traefik`) only turns those decisions into its own
objects. The contract, `FleetGateway`, is met by each backend module:
- `PER_BACKEND_PATH`: whether each destination keeps its own path rewrite. Without it the rule
  rewrites one path for every destination and routing warns when they differ.
- `crds(settings)`: add-ons the gateway's cluster installs before any other gateway controller on
  it (CRDs a controller's chart would otherwise bring in an older version); may be empty.
- `addons(gateway, settings)`: the rest of what the gateway's cluster installs for it, in order,
  after that cluster's own serving stack.
- `gateway_object(gateway, namespaces)`: the fleet Gateway, where every ModelService route
  attaches, over HTTPS when the InferenceGateway names a certificate (`tls`), then taking routes only
  from `namespaces` (those of the ModelServices).
- `gateway_policies(gateway)`: policies attached to the fleet Gateway (API keys); may be empty.
- `service_objects(service, destinations, weights)`: the objects that carry one ModelService: its
  HTTPRoute and whatever its backendRefs point at (with a `tls.backend_tls_policy` for each TLS
  destination), each namespaced in the service's namespace (or cluster-scoped).
- `bind_address(manifest, placeholder, address)`: `manifest` with a cluster's address placeholder
  replaced by the address, in the form the kind needs; other manifests come back unchanged.
Every function is pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from modelplane.api import InferenceGateway, ModelService
from modelplane.compose.gateways.tls import TLS
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon


@dataclass(frozen=True)
class Destination:
    """Where one backendRef of a service's fleet route sends requests."""

    name: str
    """Unique among the service's destinations: `backend`, or `backend-<replica>` for a
    PrefillDecode replica reached under a Host of its own."""
    backend: str
    """What is reached, named alike by every service that reaches it: `gateway-<cluster>` (a workload
    cluster's gateway) or `external-<endpoint>` (a user's ModelEndpoint)."""
    address: str
    """An IP literal, a DNS name, or a workload cluster's address placeholder."""
    port: int
    tls: TLS | None
    """How its certificate is checked (`tls.backend_tls_policy`); None: plain HTTP."""
    host: str
    """The Host header it is addressed by."""
    path: str
    """Its API root: the service's prefix `/<namespace>/<service>/` is replaced by this."""
    cluster: str = ""
    """The workload cluster whose gateway it reaches; empty for an external endpoint."""


class FleetGateway(Protocol):
    PER_BACKEND_PATH: bool

    def crds(self, settings: Settings) -> tuple[Addon, ...]: ...

    def addons(self, gateway: InferenceGateway, settings: Settings) -> tuple[Addon, ...]: ...

    def gateway_object(self, gateway: InferenceGateway, namespaces: Sequence[str]) -> dict: ...

    def gateway_policies(self, gateway: InferenceGateway) -> list[dict]: ...

    def service_objects(self, service: ModelService, destinations: Sequence[Destination],
                        weights: Sequence[int]) -> list[dict]: ...

    def bind_address(self, manifest: dict, placeholder: str, address: str) -> dict: ...
