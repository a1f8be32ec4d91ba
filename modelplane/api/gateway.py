"""The InferenceGateway (cluster-scoped): the fleet's one OpenAI-compatible front door.

Two forms load. Ours names the InferenceCluster that hosts the gateway (`spec.cluster`); the
Crossplane-based Modelplane's is a singleton named `default` that runs on the control cluster,
says which proxy runs it (`backend: Traefik`, the chart `traefik.version`) and, where no cloud
load balancer exists, `traefik.loadBalancer: MetalLB` with a `metallb.addressPool`. Both forms
share these fields, and `status.address` (what the control plane writes back) is accepted as input.

`backend` picks the proxy the gateway cluster runs for the fleet gateway:
- `EnvoyGateway` (the default): the Envoy Gateway every workload cluster already runs for its
  replicas. Nothing more to install, and every manifest written before `backend` existed routes
  byte-for-byte as before. Its one limit: it cannot rewrite the path per backend
  (envoyproxy/gateway#7099, #9095), so a ModelService whose endpoints have different API roots
  gets a `per-backend-path-rewrite` warning.
- `Traefik`: Traefik Proxy from its Helm chart next to it, which rewrites the path per backendRef,
  so such a service routes correctly. Upstream manifests say Traefik and get Traefik.

Without `spec.cluster` the gateway runs on the control cluster: `InferenceGateway.host` is then
`CONTROL_CLUSTER`, a pseudo-host name no InferenceCluster can take (it is not a DNS label), and
compose gives that host the fleet gateway's objects and the backend's add-ons exactly as it would a
workload cluster that hosts the gateway (`compose.gateways.control_stack`). Whether a control
cluster exists is the loader's explicit `control_cluster` argument (`load`, `load_sources`,
`load_objects`): True in control-cluster mode (stack config `modelplane:source: cluster`, which reads
the objects from that cluster), False for files and the CLI unless told otherwise
(`--control-cluster`); without one, `refs.gateways` reports the gateway at `spec.cluster` and says
to set it or to run in control-cluster mode.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, Strict, WithJsonSchema, model_validator

from modelplane.api.base import (
    API_VERSION,
    Bool,
    DNSLabel,
    DNSSubdomain,
    FieldError,
    Model,
    Named,
    NonEmptyStr,
    ObjectMeta,
    Str,
    bounded,
    checked_string,
)
from modelplane.api.status import Condition
from modelplane.api.values import SEMVER_PATTERN, check_version

UPSTREAM_NAME = "default"
"""The name the Crossplane-based Modelplane requires of its one InferenceGateway."""
CONTROL_CLUSTER = "_control"
"""`InferenceGateway.host` of a gateway without `spec.cluster`: the control cluster. Not a DNS label,
so never an InferenceCluster's name; it prefixes the control cluster's Pulumi resource names."""


class GatewayBackend(StrEnum):
    ENVOY_GATEWAY = "EnvoyGateway"
    TRAEFIK = "Traefik"


class LoadBalancer(StrEnum):
    METALLB = "MetalLB"


def check_address_pool(pool: str) -> str:
    """A MetalLB IPAddressPool entry: a CIDR (`10.0.0.0/28`) or a range (`172.18.255.200-172.18.255.250`)."""
    first, dash, last = pool.partition("-")
    try:
        if not dash:
            ipaddress.ip_network(pool, strict=False)
            return pool
        low, high = ipaddress.ip_address(first.strip()), ipaddress.ip_address(last.strip())
    except ValueError:
        low = high = None
    if low is None or high is None or low.version != high.version or low > high:
        raise ValueError(f"{pool!r} is not an address pool: write a CIDR (10.0.0.0/28) or a range of one IP "
                         "family, low to high (172.18.255.200-172.18.255.250)")
    return pool


class MetalLB(Model):
    address_pool: Annotated[Str, AfterValidator(check_address_pool)]
    """The addresses MetalLB may assign to LoadBalancer Services; within the cluster's network."""


class Traefik(Model):
    version: Annotated[Str, AfterValidator(check_version), checked_string(None, SEMVER_PATTERN)] | None = None
    """The `traefik` Helm chart version; default: the pinned `compose.Settings.traefik_version`."""
    load_balancer: LoadBalancer | None = None
    """`MetalLB` for clusters without a cloud load balancer (kind, bare metal); omit on a cloud."""
    metallb: MetalLB | None = None
    """MetalLB's address pool; only with loadBalancer MetalLB."""

    @model_validator(mode="after")
    def _metallb_with_its_load_balancer(self) -> Traefik:
        if self.load_balancer is LoadBalancer.METALLB and self.metallb is None:
            raise FieldError(("metallb",), "metallb.addressPool is required when loadBalancer is MetalLB")
        if self.metallb is not None and self.load_balancer is not LoadBalancer.METALLB:
            raise FieldError(("metallb",), "metallb is only allowed when loadBalancer is MetalLB")
        return self


class IssuerKind(StrEnum):
    CLUSTER_ISSUER = "ClusterIssuer"
    ISSUER = "Issuer"


class CertManager(Model):
    issuer: DNSSubdomain
    """The cert-manager issuer that signs the certificate. cert-manager and the issuer must exist on the cluster:
    modelplane installs neither."""
    issuer_kind: IssuerKind = IssuerKind.CLUSTER_ISSUER
    """`ClusterIssuer` (the default) or `Issuer` (then in modelplane-system)."""


class GatewayTLS(Model):
    certificate_secret: DNSSubdomain
    """A `kubernetes.io/tls` Secret in the modelplane-system namespace of the gateway's cluster (the platform team
    creates it, or cert-manager does with `certManager`): the fleet gateway then listens for HTTPS with it."""
    cert_manager: CertManager | None = None
    """Have cert-manager keep `certificateSecret`: a cert-manager `Certificate` for the gateway's `hostname`
    (required then) is rendered beside the Gateway."""


_PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\s*([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----")
PEM_MAX_LENGTH = 65536


def check_pem_certificates(text: str) -> str:
    """One or more PEM `CERTIFICATE` blocks with base64 bodies, and nothing else but whitespace."""
    blocks = list(_PEM_CERTIFICATE.finditer(text))
    rest = _PEM_CERTIFICATE.sub("", text).strip()
    try:
        for block in blocks:
            base64.b64decode("".join(block.group(1).split()), validate=True)
    except binascii.Error:
        blocks = []
    if not blocks or rest:
        raise ValueError("is not a PEM CA bundle: write one or more -----BEGIN CERTIFICATE----- ... "
                         "-----END CERTIFICATE----- blocks with base64 bodies and nothing else")
    return text


PEMCertificates = Annotated[str, Strict(), AfterValidator(check_pem_certificates),
                            WithJsonSchema({"type": "string", "maxLength": PEM_MAX_LENGTH}),
                            Field(max_length=PEM_MAX_LENGTH)]


class ClusterTLS(GatewayTLS):
    """TLS on the hop from the fleet gateway to each workload cluster's inference Gateway."""

    certificate_secret: DNSSubdomain
    """A `kubernetes.io/tls` Secret in modelplane-system on every workload cluster (same name on each; cert-manager
    keeps it with `certManager`): that cluster's inference Gateway listens for HTTPS on 443 with it. Its certificate
    must be valid for `<cluster>.<domain>`."""
    domain: DNSSubdomain
    """Each cluster's gateway is known as `<cluster>.<domain>` on the hop: the name the fleet gateway sends as SNI and
    checks the cluster's certificate against (it need not resolve: the fleet gateway dials the cluster's address)."""
    ca_certificates: PEMCertificates | None = None
    """The PEM CA bundle that signs the clusters' certificates (public data, like a webhook's caBundle); the fleet
    gateway trusts only it. Without it, the system's well-known CAs. Required with `clientCertificateSecret`: the
    clusters' gateways then accept only clients whose certificate it signs."""
    client_certificate_secret: DNSSubdomain | None = None
    """A `kubernetes.io/tls` Secret in modelplane-system of the fleet gateway's cluster: the client certificate the
    fleet gateway presents to every cluster's inference Gateway (mutual TLS), which refuses any client whose
    certificate `caCertificates` does not sign. cert-manager keeps it with `certManager` (same issuer, client auth,
    for `fleet.<domain>`). Without it every InferenceCluster must say `spec.gateway.publicInference: true`.
    On backend Traefik, which cannot present a client certificate itself, the fleet gateway reaches the clusters
    through an internal Envoy Gateway proxy on its cluster that presents it (`compose.gateways.hop`)."""


class GatewayAuth(Model):
    api_keys_secret: DNSSubdomain
    """An Opaque Secret in the modelplane-system namespace of the gateway's cluster whose every key is a client id
    and value its API key; requests must send `Authorization: Bearer <key>` (Envoy Gateway's SecurityPolicy
    apiKeyAuth). EnvoyGateway backend only: Traefik Proxy has no API-key middleware."""


class InferenceGatewaySpec(Model):
    cluster: DNSLabel | None = None
    """The InferenceCluster that hosts the fleet gateway; unset means the control cluster (required
    when there is none: files mode)."""
    backend: GatewayBackend = GatewayBackend.ENVOY_GATEWAY
    """The proxy that runs the fleet gateway: EnvoyGateway (the Envoy Gateway every cluster runs) or Traefik (rewrites
    the path per backend). Defaults to EnvoyGateway."""
    traefik: Traefik | None = None
    """Traefik's chart version and load balancer; only with `backend: Traefik`."""
    port: bounded(1, 65535) | None = None
    """The port the fleet gateway listens on. Defaults to 443 with `tls`, 80 with `plainHTTP`."""
    hostname: DNSSubdomain | None = None
    """Optional DNS name the gateway answers on; without it, any host. Required with `tls.certManager`."""
    tls: GatewayTLS | None = None
    """Serve HTTPS with the certificate in this Secret. Required unless `plainHTTP: true`."""
    cluster_tls: ClusterTLS | None = Field(default=None, alias="clusterTLS")
    """Reach each workload cluster's gateway over TLS (its certificate, the name it is checked against, the CA).
    Required unless `plainHTTP: true`."""
    plain_http: Bool = Field(default=False, alias="plainHTTP")
    """Serve plain HTTP and reach the clusters over plain HTTP, without `tls` and `clusterTLS`: a local demo only
    (anyone on the path reads the traffic); compose warns (`plain-http-gateway`). Defaults to false."""
    auth: GatewayAuth | None = None
    """Require an API key on every request. Without it anyone who reaches the gateway can call every model
    (compose warns: `unauthenticated-gateway`). EnvoyGateway only."""

    @model_validator(mode="after")
    def _traefik_with_its_backend(self) -> InferenceGatewaySpec:
        if self.traefik is not None and self.backend is not GatewayBackend.TRAEFIK:
            raise FieldError(("traefik",), f"traefik is only allowed when backend is Traefik, not {self.backend}")
        if self.auth is not None and self.backend is not GatewayBackend.ENVOY_GATEWAY:
            raise FieldError(("auth", "apiKeysSecret"), "API keys need backend EnvoyGateway (its SecurityPolicy "
                             "apiKeyAuth): Traefik Proxy has no API-key middleware; set backend: EnvoyGateway or "
                             "remove auth")
        client = self.cluster_tls.client_certificate_secret if self.cluster_tls else None
        if client is not None and self.cluster_tls is not None and self.cluster_tls.ca_certificates is None:
            raise FieldError(("clusterTLS", "caCertificates"), "caCertificates is required with "
                             "clientCertificateSecret: the clusters' gateways accept only client certificates this "
                             "private CA signs (with the system's public CAs anyone holding a public certificate "
                             "would pass)")
        return self

    @model_validator(mode="after")
    def _secure_unless_plain_http(self) -> InferenceGatewaySpec:
        for field, value in (("tls", self.tls), ("clusterTLS", self.cluster_tls)):
            if self.plain_http and value is not None:
                raise FieldError((field,), f"{field} contradicts plainHTTP: true; remove one of them")
            if not self.plain_http and value is None:
                raise FieldError((field,), f"{field} is required: {SECURE_BY_DEFAULT[field]}, or set plainHTTP: true "
                                 "for a local demo (plain HTTP on both hops, with a warning)")
        if self.tls is not None and self.tls.cert_manager is not None and self.hostname is None:
            raise FieldError(("hostname",), "hostname is required with tls.certManager: it is the DNS name of the "
                             "certificate cert-manager issues")
        return self


SECURE_BY_DEFAULT = {
    "tls": "the fleet gateway serves HTTPS; name its certificate's Secret (tls.certificateSecret, optionally kept by "
           "cert-manager: tls.certManager.issuer)",
    "clusterTLS": "the fleet gateway reaches each cluster's gateway over TLS; name the clusters' certificate Secret "
                   "and the domain they are known under (clusterTLS.certificateSecret, clusterTLS.domain, and "
                   "clusterTLS.caCertificates for a private CA)"}
"""Why each of `tls` and `clusterTLS` is required, in the error that says it is missing."""


class InferenceGatewayStatus(Model):
    address: NonEmptyStr | None = None
    """The gateway's external address, as the control plane last observed it."""
    conditions: tuple[Condition, ...] | None = None
    """Ready, only when the gateway's spec is refused (InvalidSpec) or it is on a cluster held by a refused object
    (DependencyRefused): the run planned with its last accepted spec, or without it; absent otherwise."""


class InferenceGateway(Named, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["InferenceGateway"] = "InferenceGateway"
    metadata: ObjectMeta
    spec: InferenceGatewaySpec
    status: InferenceGatewayStatus | None = None
    """What the control plane last observed; written back in control-cluster mode."""

    @property
    def host(self) -> str:
        """The InferenceCluster the gateway runs on, or `CONTROL_CLUSTER` without `spec.cluster` (the
        loader accepts that only when told a control cluster exists)."""
        return self.spec.cluster or CONTROL_CLUSTER

    @property
    def port(self) -> int:
        """The port the fleet gateway listens on: `spec.port`, else 443 with `tls` and 80 with `plainHTTP`."""
        return self.spec.port or (443 if self.spec.tls else 80)

    @property
    def traefik(self) -> Traefik:
        """Traefik's settings (all defaults when the manifest gives none)."""
        return self.spec.traefik or Traefik()
