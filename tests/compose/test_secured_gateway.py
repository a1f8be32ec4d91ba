"""The secured fleet gateway on Envoy Gateway: `tls` makes the listener HTTPS with the named
certificate, `auth` adds a SecurityPolicy that requires an API key of the named Secret, and either
restricts the routes to the namespaces of the ModelServices. Every object validates against the
published CRDs (Gateway API v1.5.1, Envoy Gateway v1.7.0 SecurityPolicy); without them the
gateway is what it was (plain HTTP, routes from every namespace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, load_sources
from modelplane.compose import render
from modelplane.scheduling import place
from tests.compose.helpers import find
from tests.compose.schemas import problems

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "qwen-demo"
SECURED = ("  cluster: starter\n  port: 443\n  tls: {certificateSecret: fleet-cert}\n"
           "  auth: {apiKeysSecret: fleet-keys}\n")


def fleet_gateway(spec: str = "  cluster: starter\n") -> tuple[dict, ...]:
    sources = [(str(p), p.read_text().replace("  cluster: starter\n", spec)) for p in sorted(EXAMPLE.glob("*.yaml"))]
    manifests = load_sources(sources)
    return render(manifests, place(manifests.fleet, manifests.workloads)).gateway


def test_a_secured_gateway_listens_for_https_on_the_named_certificate_for_the_services_namespaces() -> None:
    listener = find(fleet_gateway(SECURED), "Gateway")["spec"]["listeners"][0]
    assert listener == {
        "name": "http", "protocol": "HTTPS", "port": 443, "tls": {
            "mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "fleet-cert"}]},
        "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}]}}}}


def test_auth_requires_an_api_key_of_the_named_secret_on_the_fleet_gateway() -> None:
    policy = find(fleet_gateway(SECURED), "SecurityPolicy")
    assert (policy["metadata"]["namespace"], policy["spec"]["targetRefs"]) == (
        "modelplane-system", [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "fleet"}])
    assert policy["spec"]["apiKeyAuth"]["credentialRefs"] == [{"kind": "Secret", "name": "fleet-keys"}]
    assert policy["spec"]["apiKeyAuth"]["extractFrom"] == [{"headers": ["Authorization"]}]


@pytest.mark.parametrize("spec", [SECURED, "  cluster: starter\n"])
def test_every_gateway_object_validates_against_its_crd(spec: str) -> None:
    assert {f"{m['kind']}/{m['metadata']['name']}": problems(m) for m in fleet_gateway(spec)} == {
        f"{m['kind']}/{m['metadata']['name']}": [] for m in fleet_gateway(spec)}


def test_without_tls_or_auth_the_gateway_is_unchanged() -> None:
    objects = fleet_gateway()
    assert [m["kind"] for m in objects if m["kind"] == "SecurityPolicy"] == []
    assert find(objects, "Gateway")["spec"]["listeners"][0] == {
        "name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}


@pytest.mark.parametrize(("spec", "field"), [
    ("  cluster: starter\n  backend: Traefik\n  tls: {certificateSecret: c}\n", "tls"),
    ("  cluster: starter\n  backend: Traefik\n  auth: {apiKeysSecret: k}\n", "auth"),
    ("  cluster: starter\n  tls: {certificateSecret: Not_A_Name}\n", "tls.certificateSecret"),
])
def test_what_is_not_built_or_not_a_name_is_an_error_at_its_field(spec: str, field: str) -> None:
    with pytest.raises(ManifestErrors) as errors:
        fleet_gateway(spec)
    assert [str(e).split(": ")[2] for e in errors.value.errors] == [f"spec.{field}"]
