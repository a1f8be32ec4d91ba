"""The secured fleet gateway, secure by default: `tls` makes the listener HTTPS with the named
certificate (cert-manager keeps it with `tls.certManager`), `clusterTLS` makes each workload
cluster's inference Gateway HTTPS and the fleet gateway's backends TLS (a BackendTLSPolicy checking
`<cluster>.<domain>` against the fleet's CA), `auth` adds a SecurityPolicy requiring an API key;
routes come only from the namespaces that own them. Plain HTTP only with `plainHTTP: true`, warned
about. Every object validates against the published CRDs (Gateway API v1.5.1, Envoy Gateway v1.7.0
SecurityPolicy and v1.9.0 Backend, cert-manager v1.21.1 Certificate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, load_sources
from modelplane.compose import Rendered, render
from modelplane.scheduling import place
from tests.compose.helpers import find
from tests.compose.schemas import problems

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "qwen-demo"
PLAIN = "  plainHTTP: true"
CA = ("|\n      -----BEGIN CERTIFICATE-----\n      MIIBszCCAVmgAwIBAgIUW2Fb\n"
      "      -----END CERTIFICATE-----\n")
SECURED = f"  port: 443\n  tls: {{certificateSecret: fleet-cert}}\n  auth: {{apiKeysSecret: fleet-keys}}\n"
CLIENT = "    clientCertificateSecret: fleet-client\n"
HOP = ("  clusterTLS:\n    certificateSecret: cluster-cert\n    domain: clusters.example.com\n"
       f"{CLIENT}    caCertificates: {CA}")
CERT_MANAGER = ("  hostname: models.example.com\n  tls: {certificateSecret: fleet-cert, certManager: {issuer: letsencrypt}}\n"
                "  clusterTLS:\n    certificateSecret: cluster-cert\n    domain: clusters.example.com\n"
                f"    certManager: {{issuer: fleet-ca, issuerKind: Issuer}}\n{CLIENT}    caCertificates: {CA}")
CLUSTER_SPEC = "    modelplane.ai/region: us-central\nspec:\n"
DEMO_OPEN = ("  gateway:\n    # A local demo over plain HTTP: anyone who reaches this cluster's gateway may call its models.\n"
             "    publicInference: true\n")
"""What the plain-HTTP demo's cluster says; a secured gateway authenticates the hop instead."""


def rendered(security: str = PLAIN, backend: str = "", public: bool = False) -> Rendered:
    """qwen-demo with its gateway's `plainHTTP: true` line replaced by `security` (and a backend line);
    `public`: its cluster says `spec.gateway.publicInference: true`."""
    line = next(line for line in (EXAMPLE / "fleet.yaml").read_text().splitlines() if line.startswith(PLAIN))
    opened = CLUSTER_SPEC + "  gateway: {publicInference: true}\n" if public else CLUSTER_SPEC
    demo = DEMO_OPEN if CLIENT in security or public else ""
    sources = [(str(p), p.read_text().replace(line + "\n", backend + security).replace(demo, "")
                .replace(CLUSTER_SPEC, opened)) for p in sorted(EXAMPLE.glob("*.yaml"))]
    manifests = load_sources(sources)
    return render(manifests, place(manifests.fleet, manifests.workloads))


def test_a_secured_gateway_listens_for_https_on_the_named_certificate_for_the_services_namespaces() -> None:
    listener = find(rendered(SECURED + HOP).gateway, "Gateway")["spec"]["listeners"][0]
    assert listener == {
        "name": "http", "protocol": "HTTPS", "port": 443, "tls": {
            "mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": "fleet-cert"}]},
        "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}]}}}}


def test_the_port_defaults_to_443_with_tls() -> None:
    objects = rendered(SECURED.replace("  port: 443\n", "") + HOP).gateway
    assert find(objects, "Gateway")["spec"]["listeners"][0]["port"] == 443


def test_auth_requires_an_api_key_of_the_named_secret_on_the_fleet_gateway() -> None:
    policy = find(rendered(SECURED + HOP).gateway, "SecurityPolicy")
    assert (policy["metadata"]["namespace"], policy["spec"]["targetRefs"]) == (
        "modelplane-system", [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "fleet"}])
    assert policy["spec"]["apiKeyAuth"]["credentialRefs"] == [{"group": "", "kind": "Secret", "name": "fleet-keys"}]
    assert policy["spec"]["apiKeyAuth"]["extractFrom"] == [{"headers": ["Authorization"]}]


def test_the_hop_to_each_cluster_is_tls_checked_against_its_name_and_the_fleets_ca() -> None:
    out = rendered(SECURED + HOP)
    backend = find(out.gateway, "Backend", "gateway-starter")
    assert backend["spec"]["endpoints"] == [{"fqdn": {"hostname": "starter.gateway-address.modelplane.invalid",
                                                       "port": 443}}]
    policy = find(out.gateway, "BackendTLSPolicy", "gateway-starter")
    assert (policy["metadata"]["namespace"], policy["spec"]) == ("ml-team", {
        "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "gateway-starter"}],
        "validation": {"hostname": "starter.clusters.example.com",
                       "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]}})
    ca = find(out.gateway, "ConfigMap", "modelplane-clusters-ca")
    assert (ca["metadata"]["namespace"], ca["data"]["ca.crt"].splitlines()[0]) == ("ml-team", "-----BEGIN CERTIFICATE-----")
    assert [e["spec"]["url"] for e in out.endpoints] == [
        "https://starter.gateway-address.modelplane.invalid/ml-team/qwen-demo-starter-0/"]


def test_each_clusters_inference_gateway_serves_https_to_the_namespaces_modelplane_manages() -> None:
    [addon] = [a for a in rendered(SECURED + HOP).addons["starter"] if a.name == "inference-gateway"]
    listener = find(list(addon.objects), "Gateway", "inference")["spec"]["listeners"][0]
    assert listener == {
        "name": "http", "protocol": "HTTPS", "port": 443, "tls": {
            "mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": "cluster-cert"}]},
        "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
            "matchLabels": {"app.kubernetes.io/managed-by": "modelplane"}}}}}


def test_cert_manager_keeps_both_certificates_for_their_names() -> None:
    out = rendered(CERT_MANAGER)
    fleet = find(out.gateway, "Certificate", "fleet-cert")["spec"]
    assert fleet == {"secretName": "fleet-cert", "dnsNames": ["models.example.com"],
                     "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"}}
    [addon] = [a for a in out.addons["starter"] if a.name == "inference-gateway"]
    cluster = find(list(addon.objects), "Certificate", "cluster-cert")["spec"]
    assert cluster == {"secretName": "cluster-cert", "dnsNames": ["starter.clusters.example.com"],
                       "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": "fleet-ca"}}
    client = find(out.gateway, "Certificate", "fleet-client")["spec"]
    assert client == {"secretName": "fleet-client", "dnsNames": ["fleet.clusters.example.com"],
                      "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": "fleet-ca"},
                      "usages": ["client auth", "digital signature", "key encipherment"]}
    policy = find(out.gateway, "BackendTLSPolicy", "gateway-starter")["spec"]["validation"]
    assert policy == {"hostname": "starter.clusters.example.com",
                      "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]}


def test_traefik_serves_https_on_websecure_and_checks_the_hop_on_each_service() -> None:
    out = rendered(SECURED.replace("  auth: {apiKeysSecret: fleet-keys}\n", "") + HOP.replace(CLIENT, ""),
                   "  backend: Traefik\n", public=True)
    listener = find(out.gateway, "Gateway")["spec"]["listeners"][0]
    assert (listener["name"], listener["port"], listener["protocol"], listener["allowedRoutes"]["namespaces"]["from"]) == (
        "websecure", 8443, "HTTPS", "Selector")
    [chart] = [a for a in out.addons["starter"] if a.name == "traefik"]
    assert chart.values["ports"] == {"web": {"port": 8000, "expose": {"default": False}},
                                     "websecure": {"port": 8443, "exposedPort": 443}}
    policy = find(out.gateway, "BackendTLSPolicy")
    assert policy["spec"]["targetRefs"] == [{"group": "", "kind": "Service", "name": policy["metadata"]["name"]}]
    assert policy["spec"]["validation"]["hostname"] == "starter.clusters.example.com"


SPECS = {"plain": PLAIN + "\n", "secured": SECURED + HOP, "cert-manager": CERT_MANAGER}


@pytest.mark.parametrize("backend", ["", "  backend: Traefik\n"], ids=["EnvoyGateway", "Traefik"])
@pytest.mark.parametrize("name", list(SPECS))
def test_every_gateway_object_validates_against_its_crd(name: str, backend: str) -> None:
    security = SPECS[name].replace("  auth: {apiKeysSecret: fleet-keys}\n", "").replace(CLIENT, "") if backend \
        else SPECS[name]
    out = rendered(security, backend, public=bool(backend) and name != "plain")
    objects = [*out.gateway, *(o for addon in out.addons["starter"] for o in addon.objects)]
    assert {f"{m['kind']}/{m['metadata']['name']}": problems(m) for m in objects} == {
        f"{m['kind']}/{m['metadata']['name']}": [] for m in objects}


def test_plain_http_is_the_old_gateway_and_warned_about() -> None:
    out = rendered()
    assert [m["kind"] for m in out.gateway if m["kind"] in ("SecurityPolicy", "BackendTLSPolicy", "Certificate")] == []
    assert find(out.gateway, "Gateway")["spec"]["listeners"][0] == {
        "name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}
    [warning] = out.warnings
    assert (warning.code, warning.path, warning.line) == ("plain-http-gateway", "spec.plainHTTP", 57)


def test_a_secured_gateway_without_auth_is_warned_about() -> None:
    [warning] = rendered(SECURED.replace("  auth: {apiKeysSecret: fleet-keys}\n", "") + HOP).warnings
    assert (warning.code, warning.path) == ("unauthenticated-gateway", "spec.auth")


@pytest.mark.parametrize(("security", "field", "says"), [
    ("", "tls", "tls is required: the fleet gateway serves HTTPS"),
    ("  tls: {certificateSecret: c}\n", "clusterTLS", "clusterTLS is required"),
    (PLAIN + "\n  tls: {certificateSecret: c}\n", "tls", "tls contradicts plainHTTP: true"),
    (PLAIN + "\n  auth: {apiKeysSecret: k}\n  backend: Traefik\n", "auth.apiKeysSecret",
     "API keys need backend EnvoyGateway"),
    ("  tls: {certificateSecret: Not_A_Name}\n" + HOP, "tls.certificateSecret", "is not a DNS subdomain"),
    ("  tls: {certificateSecret: c, certManager: {issuer: i}}\n" + HOP, "hostname", "hostname is required"),
    ("  tls: {certificateSecret: c}\n" + HOP.replace("MIIBszCCAVmgAwIBAgIUW2Fb", "not base64!"),
     "clusterTLS.caCertificates", "is not a PEM CA bundle"),
])
def test_what_is_missing_contradictory_or_not_built_is_an_error_at_its_field(security: str, field: str,
                                                                             says: str) -> None:
    with pytest.raises(ManifestErrors) as errors:
        rendered(security)
    [error] = errors.value.errors
    assert (error.path, says in error.message) == (f"spec.{field}", True), str(error)
