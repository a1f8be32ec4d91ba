"""The secured fleet gateway on a real kube-apiserver 1.34: `modelplane plan --render` of the
qwen-demo fleet with `tls` (cert-manager keeping its Secret), `clusterTLS` (a private CA, and the
fleet gateway's client certificate: mutual TLS) and `auth` on its InferenceGateway writes an HTTPS
Gateway restricted to the services' namespaces with its EnvoyProxy (the client certificate), an Envoy
Gateway SecurityPolicy, cert-manager Certificates, a BackendTLSPolicy and the CA's ConfigMap for the
hop to each cluster, and each cluster's HTTPS inference Gateway with the ClientTrafficPolicy that
requires the client certificate; the API server (with the published Gateway API v1.5.1, Envoy Gateway
v1.7.0/v1.9.0 and cert-manager v1.21.1 CRDs of tests/data/crds) accepts every object, in a
server-side dry run and for real, and keeps the fields as written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, kubectl
from modelplane.local.servers import Fleet
from tests.compose.test_secured_gateway import DEMO_OPEN
from tests.e2e.test_server_side_validation import apply, delete

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "examples" / "qwen-demo"
PLAIN = "  plainHTTP: true"
SECURED = ("  hostname: models.example.com\n  tls: {certificateSecret: fleet-cert, certManager: {issuer: letsencrypt}}\n"
           "  auth: {apiKeysSecret: fleet-keys}\n  clusterTLS:\n    certificateSecret: cluster-cert\n"
           "    domain: clusters.example.com\n    certManager: {issuer: fleet-ca, issuerKind: Issuer}\n"
           "    clientCertificateSecret: fleet-client\n"
           "    caCertificates: |\n      -----BEGIN CERTIFICATE-----\n      MIIBszCCAVmgAwIBAgIUW2Fb\n"
           "      -----END CERTIFICATE-----\n")


def render_secured(tmp_path: Path, gateway: str) -> list[dict]:
    """The fleet gateway's objects `modelplane plan --render` writes for the example with its InferenceGateway
    given the `gateway` lines instead of plainHTTP (and its cluster closed)."""
    for path in EXAMPLE.glob("*.yaml"):
        lines = [line for line in path.read_text().splitlines(keepends=True) if not line.startswith(PLAIN)]
        secured = "".join(lines).replace(DEMO_OPEN, "").replace("  cluster: starter\n", "  cluster: starter\n" + gateway)
        (tmp_path / path.name).write_text(secured)
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "modelplane"), "plan", str(tmp_path), "--render",
                               str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert rendered.returncode == 0, rendered.stderr
    return [yaml.safe_load(p.read_text()) for p in sorted((tmp_path / "out" / "_gateway").rglob("*.yaml"))]


def test_the_secured_gateway_objects_are_accepted_as_written(fleet: Fleet, tools: Path, tmp_path: Path) -> None:
    objects = render_secured(tmp_path, SECURED)
    assert {o["kind"] for o in objects} == {"Certificate", "Gateway", "SecurityPolicy", "HTTPRoute", "Backend",
                                            "BackendTLSPolicy", "ConfigMap", "EnvoyProxy"}
    stack = yaml.safe_load_all((tmp_path / "out" / "_inventory" / "stacks" / "starter.yaml").read_text())
    [inference] = [addon for addon in stack if addon["name"] == "inference-gateway"]
    objects += [o for o in inference["objects"] if o["kind"] in ("Certificate", "Gateway", "ClientTrafficPolicy",
                                                                 "ConfigMap")]
    server = next(iter(fleet.clusters.values()))
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                  for name in sorted({o["metadata"]["namespace"] for o in objects})]
    apply(tools, server, namespaces)
    try:
        apply(tools, server, objects, "--dry-run=server")
        apply(tools, server, objects)
        stored, gateway = (json.loads(kubectl(tools, server, "get", "-n", "modelplane-system", resource, "fleet",
                                              "-o", "json").stdout)
                           for resource in ("securitypolicies.gateway.envoyproxy.io", "gateways.gateway.networking.k8s.io"))
        assert stored["spec"]["apiKeyAuth"]["credentialRefs"] == [{"group": "", "kind": "Secret", "name": "fleet-keys"}]
        listener = gateway["spec"]["listeners"][0]
        assert (listener["protocol"], listener["tls"]["certificateRefs"][0]["name"],
                listener["allowedRoutes"]["namespaces"]["from"]) == ("HTTPS", "fleet-cert", "Selector")
        hop, inference, certificate = (json.loads(kubectl(tools, server, "get", "-n", namespace, resource, name,
                                                          "-o", "json").stdout) for namespace, resource, name in (
            ("ml-team", "backendtlspolicies.gateway.networking.k8s.io", "gateway-starter"),
            ("modelplane-system", "gateways.gateway.networking.k8s.io", "inference"),
            ("modelplane-system", "certificates.cert-manager.io", "cluster-cert")))
        assert hop["spec"]["validation"] == {"hostname": "starter.clusters.example.com", "caCertificateRefs": [
            {"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]}
        assert (inference["spec"]["listeners"][0]["port"], inference["spec"]["listeners"][0]["protocol"]) == (443, "HTTPS")
        assert certificate["spec"]["dnsNames"] == ["starter.clusters.example.com"]
        proxy, clients = (json.loads(kubectl(tools, server, "get", "-n", "modelplane-system", resource, name,
                                             "-o", "json").stdout) for resource, name in (
            ("envoyproxies.gateway.envoyproxy.io", "fleet"),
            ("clienttrafficpolicies.gateway.envoyproxy.io", "inference-clients")))
        assert proxy["spec"]["backendTLS"]["clientCertificateRef"] == {"group": "", "kind": "Secret",
                                                                       "name": "fleet-client"}
        assert clients["spec"]["tls"]["clientValidation"]["caCertificateRefs"] == [
            {"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]
    finally:
        delete(tools, server, objects)
        delete(tools, server, namespaces)


def test_the_traefik_hop_objects_are_accepted_as_written(fleet: Fleet, tools: Path, tmp_path: Path) -> None:
    """The same fleet on a Traefik fleet gateway (no `auth`: Traefik has no API keys): its cluster hop goes
    through the `modelplane-hop` Envoy Gateway proxy (compose/gateways/hop.py), whose EnvoyProxy, Gateway,
    NetworkPolicy and routes the API server accepts and keeps as written, beside Traefik's Services and
    EndpointSlices (an FQDN address: the hop's Service)."""
    objects = render_secured(tmp_path, SECURED.replace("  auth: {apiKeysSecret: fleet-keys}\n", "  backend: Traefik\n"))
    assert {o["kind"] for o in objects} == {"Certificate", "Gateway", "HTTPRoute", "Backend", "BackendTLSPolicy",
                                            "ConfigMap", "EnvoyProxy", "NetworkPolicy", "Service", "EndpointSlice"}
    server = next(iter(fleet.clusters.values()))
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                  for name in sorted({o["metadata"]["namespace"] for o in objects})]
    assert [n["metadata"]["name"] for n in namespaces] == ["envoy-gateway-system", "ml-team", "modelplane-system"]
    apply(tools, server, namespaces)
    try:
        apply(tools, server, objects, "--dry-run=server")
        apply(tools, server, objects)
        proxy, policy, slices = (json.loads(kubectl(tools, server, "get", "-n", namespace, resource, name,
                                                    "-o", "json").stdout) for namespace, resource, name in (
            ("modelplane-system", "envoyproxies.gateway.envoyproxy.io", "modelplane-hop"),
            ("envoy-gateway-system", "networkpolicies.networking.k8s.io", "modelplane-hop"),
            ("ml-team", "endpointslices.discovery.k8s.io", "qwen-gateway-starter")))
        service = proxy["spec"]["provider"]["kubernetes"]["envoyService"]  # with the CRD's defaults added
        assert (proxy["spec"]["backendTLS"], proxy["spec"]["provider"]["type"], service["type"], service["name"]) == (
            {"clientCertificateRef": {"group": "", "kind": "Secret", "name": "fleet-client"}}, "Kubernetes",
            "ClusterIP", "modelplane-hop")
        assert policy["spec"]["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "traefik-system"}}}]}]
        assert (slices["addressType"], slices["endpoints"][0]["addresses"]) == (
            "FQDN", ["modelplane-hop.envoy-gateway-system.svc"])
    finally:
        delete(tools, server, objects)
        delete(tools, server, namespaces)
