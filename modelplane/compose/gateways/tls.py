"""TLS on both hops of the fleet gateway, the same on every backend.

- Certificates: a listener serves the `kubernetes.io/tls` Secret its InferenceGateway names; with
  `certManager` a cert-manager `Certificate` (cert-manager.io/v1) beside it keeps that Secret, for the
  fleet gateway's `hostname` or for a cluster's `<cluster>.<domain>`. cert-manager and the issuer
  must exist on the cluster: nothing here installs them.
- Workload clusters (`cluster_gateway_objects`): with `clusterTLS`, each cluster's inference Gateway
  listens for HTTPS on 443 with the `clusterTLS.certificateSecret` of that cluster and takes routes
  only from namespaces modelplane manages (labelled `app.kubernetes.io/managed-by: modelplane`, as
  every namespace compose renders is); with `plainHTTP`, plain HTTP on 80 from every namespace, as before.
- Backends (`backend_tls_policy`): every TLS destination of a fleet route gets a Gateway API
  `BackendTLSPolicy` (v1) on what its backendRef points at, in that object's namespace: SNI and
  certificate check against the destination's `TLS.hostname` (an external endpoint's host, a cluster's
  `<cluster>.<domain>`), trusting the fleet's CA bundle (a ConfigMap `ca_config_map` renders from
  `clusterTLS.caCertificates` into that namespace: a policy may only name one there) or the system's
  CAs. Envoy Gateway and Traefik both honour it.
- Mutual TLS on the cluster hop (`clusterTLS.clientCertificateSecret`): the fleet gateway presents that
  client certificate to every cluster (`fleet_client_certificate`; the EnvoyGateway backend attaches
  it, `envoy.gateway_policies`; a Traefik one reaches the clusters through `hop`, which does), kept by
  cert-manager with `certManager` as a client-auth Certificate
  for `fleet.<domain>` from the clusters' issuer. Each cluster's inference Gateway then requires a
  client certificate signed by `clusterTLS.caCertificates` (`client_validation`: an Envoy Gateway
  `ClientTrafficPolicy` on the inference Gateway and the CA's ConfigMap beside it, in
  modelplane-system): a caller without one fails the TLS handshake. A cluster with
  `spec.gateway.publicInference: true` is left open (the loader warns).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import CertManager, ClusterGateway, InferenceGateway
from modelplane.compose import names
from modelplane.compose.gateways import keys
from modelplane.compose.stack import (
    GATEWAY_PORT,
    INFERENCE_GATEWAY,
    SYSTEM_NAMESPACE,
    gateway_object,
)
from modelplane.invariants import present

CERT_MANAGER_API = "cert-manager.io/v1"
CLUSTER_TLS_PORT = 443
"""The port a workload cluster's inference Gateway listens on with `clusterTLS`."""
CA_CONFIG_MAP = "modelplane-clusters-ca"
"""The ConfigMap (key `ca.crt`) holding `clusterTLS.caCertificates` beside each policy that trusts it."""


@dataclass(frozen=True)
class TLS:
    """How the fleet gateway checks one destination's certificate."""

    hostname: str
    """Sent as SNI; the certificate must be valid for it."""
    ca_certificates: str | None = None
    """The PEM bundle to trust; None: the system's well-known CAs."""


CLIENT_USAGES = ("client auth", "digital signature", "key encipherment")
"""cert-manager usages of the fleet gateway's client certificate (RSA keys need key encipherment)."""
CLIENT_VALIDATION = "inference-clients"
"""The ClientTrafficPolicy on each cluster's inference Gateway that requires the fleet's client certificate."""
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"


def certificate(secret: str, dns_name: str, issuer: CertManager, usages: tuple[str, ...] = ()) -> dict:
    """The cert-manager Certificate that keeps `secret` (in modelplane-system) valid for `dns_name`
    (with `usages` when given; cert-manager's default otherwise)."""
    spec: dict = {"secretName": secret, "dnsNames": [dns_name],
                  "issuerRef": {"group": "cert-manager.io", "kind": str(issuer.issuer_kind), "name": issuer.issuer}}
    if usages:
        spec["usages"] = list(usages)
    return {"apiVersion": CERT_MANAGER_API, "kind": "Certificate",
            "metadata": {"name": secret, "namespace": SYSTEM_NAMESPACE, "labels": names.managed()}, "spec": spec}


def fleet_certificates(gateway: InferenceGateway) -> list[dict]:
    """The fleet listener's Certificate with `tls.certManager` (the loader requires `hostname` then), and
    the fleet gateway's client certificate's with `clusterTLS.certManager` and a client certificate."""
    tls, hop = gateway.spec.tls, gateway.spec.cluster_tls
    certificates = []
    if tls is not None and tls.cert_manager is not None:
        hostname = present(gateway.spec.hostname, f"validated: InferenceGateway {gateway.name} with tls.certManager "
                                                  "has a hostname")
        certificates.append(certificate(tls.certificate_secret, hostname, tls.cert_manager))
    client = fleet_client_certificate(gateway)
    if hop is not None and hop.cert_manager is not None and client is not None:
        certificates.append(certificate(client, f"fleet.{hop.domain}", hop.cert_manager, CLIENT_USAGES))
    return certificates


def fleet_client_certificate(gateway: InferenceGateway | None) -> str | None:
    """The Secret of the client certificate the fleet gateway presents to the clusters; None without one."""
    hop = gateway.spec.cluster_tls if gateway else None
    return hop.client_certificate_secret if hop else None


def client_validation(gateway: InferenceGateway | None) -> tuple[dict, ...]:
    """What makes a cluster's inference Gateway require the fleet gateway's client certificate: the CA's
    ConfigMap and a ClientTrafficPolicy trusting it; nothing without a client certificate."""
    hop = gateway.spec.cluster_tls if gateway else None
    if hop is None or hop.client_certificate_secret is None:
        return ()
    ca = present(hop.ca_certificates, "validated: clusterTLS with clientCertificateSecret has caCertificates")
    policy = {"apiVersion": ENVOY_GATEWAY_API, "kind": "ClientTrafficPolicy",
              "metadata": {"name": CLIENT_VALIDATION, "namespace": SYSTEM_NAMESPACE, "labels": names.managed()},
              "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                       "name": INFERENCE_GATEWAY}],
                       "tls": {"clientValidation": {"caCertificateRefs": [
                           {"group": "", "kind": "ConfigMap", "name": CA_CONFIG_MAP}]}}}}
    return (*ca_config_maps(SYSTEM_NAMESPACE, TLS("", ca)), policy)


def cluster_tls(gateway: InferenceGateway | None, cluster: str) -> TLS | None:
    """How the fleet gateway checks a workload cluster's gateway: as `<cluster>.<domain>`, with the
    fleet's CA bundle; None on plain HTTP (or without a fleet gateway)."""
    tls = gateway.spec.cluster_tls if gateway else None
    return TLS(f"{cluster}.{tls.domain}", tls.ca_certificates) if tls else None


def cluster_port(tls: TLS | None) -> int:
    """The port of a workload cluster's inference Gateway."""
    return CLUSTER_TLS_PORT if tls else GATEWAY_PORT


def cluster_gateway_objects(gateway: InferenceGateway | None, cluster: str,
                            access: ClusterGateway | None = None) -> tuple[dict, ...]:
    """A workload cluster's inference Gateway (its Certificate, and unless `access` says publicInference what
    requires the fleet gateway's client certificate), as the module docstring says; with `access.auth` (a fleet
    without an InferenceGateway: validation refuses it behind one) the SecurityPolicy requiring its API keys."""
    tls, hop = gateway.spec.cluster_tls if gateway else None, cluster_tls(gateway, cluster)
    public = access is not None and access.public_inference
    policies = (keys.api_key_policy(INFERENCE_GATEWAY, access.auth),) if access and access.auth else ()
    if tls is None or hop is None:
        return (gateway_object(INFERENCE_GATEWAY, GATEWAY_PORT), *policies)
    listener = gateway_object(INFERENCE_GATEWAY, CLUSTER_TLS_PORT, certificate=tls.certificate_secret,
                              selector={"matchLabels": names.managed()})
    kept = (certificate(tls.certificate_secret, hop.hostname, tls.cert_manager),) if tls.cert_manager else ()
    return (*kept, listener, *(() if public else client_validation(gateway)), *policies)


def backend_tls_policy(metadata: dict, target: dict, tls: TLS) -> dict:
    """A BackendTLSPolicy on `target` (a backendRef's group, kind and name), in `metadata`'s namespace."""
    validation: dict = {"hostname": tls.hostname}
    if tls.ca_certificates is None:
        validation["wellKnownCACertificates"] = "System"
    else:
        validation["caCertificateRefs"] = [{"group": "", "kind": "ConfigMap", "name": CA_CONFIG_MAP}]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy", "metadata": metadata,
            "spec": {"targetRefs": [target], "validation": validation}}


def ca_config_maps(namespace: str, tls: TLS) -> list[dict]:
    """The ConfigMap a policy with a CA bundle names, in its namespace (none for the system CAs)."""
    if tls.ca_certificates is None:
        return []
    return [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": CA_CONFIG_MAP, "namespace": namespace, "labels": names.managed()},
             "data": {"ca.crt": tls.ca_certificates}}]
