"""The fleet gateway's two backends: one routing model, Envoy Gateway's objects and Traefik's.

Expected routing comes from the routing contract (compose/routing.py) and the facts each backend
module cites: Traefik rewrites the path and Host per backendRef (traefik v3.7.1
pkg/provider/kubernetes/gateway/httproute.go), Envoy Gateway only per rule (envoyproxy/gateway#7099).
Every object is validated against the published schemas: Kubernetes 1.34, Gateway API v1.5.1,
MetalLB v0.14.9's CRDs and the Traefik chart 40.2.0's values.schema.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest

from modelplane.api import Fleet, InferenceGateway
from modelplane.compose import Addon, Install, Rendered, Settings, address_placeholder, bind_addresses
from modelplane.compose.gateways import traefik
from modelplane.compose.routing import service_host
from tests.compose.helpers import FLEET, codes, compose, deployment, external, find, service
from tests.compose.schemas import chart_value_problems, problems

QWEN = {"modelplane.ai/deployment": "qwen"}
GROQ = {"provider": "groq"}
# A hosted provider whose OpenAI API lives at /openai/v1/: the service's /v1/... must reach /openai/v1/...
OPENAI_ROOT = external("groq", "https://api.groq.com/openai/", GROQ, rewrite="/openai/")
CHAT_HOST = service_host("ml", "chat")


def fleet(backend: str = "Traefik", traefik_spec: dict[str, Any] | None = None, cluster: str = "gpu-a",
          security: dict[str, Any] | None = None) -> Fleet:
    """A fleet whose gateway runs on `backend`; plain HTTP unless `security` gives its tls, clusterTLS and auth."""
    spec: dict[str, Any] = {"cluster": cluster, "backend": backend, **(security or {"plainHTTP": True})}
    if traefik_spec is not None:
        spec["traefik"] = traefik_spec
    gateway = InferenceGateway.model_validate({"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceGateway",
                                               "metadata": {"name": "default"}, "spec": spec})
    return Fleet(clusters=FLEET.clusters, classes=FLEET.classes, gateway=gateway)


TRAEFIK = fleet()
METALLB = fleet(traefik_spec={"version": "40.2.0", "loadBalancer": "MetalLB",
                              "metallb": {"addressPool": "172.18.255.200-172.18.255.250"}})
ENVOY = fleet("EnvoyGateway")


def mixed(on: Fleet, addresses: dict[str, str] | None = None) -> Rendered:
    """One replica per cluster and the hosted provider, half and half."""
    return compose(deployment("qwen", replicas=2), services=(service("chat", (QWEN, 1), (GROQ, 1)),),
                   endpoints=(OPENAI_ROOT,), fleet=on, addresses=addresses)


def route_refs(rendered: Rendered, name: str = "chat") -> list[tuple[str, int, str, str]]:
    """(backend, weight, Host, path) of each backendRef of a service's fleet route, for either backend:
    a rule-level rewrite applies to every backendRef unless the backendRef rewrites it itself."""
    [rule] = find([m for m in rendered.gateway if m["metadata"]["name"] == name], "HTTPRoute")["spec"]["rules"]
    shared = next((f["urlRewrite"] for f in rule.get("filters", []) if f["type"] == "URLRewrite"), {})
    refs = []
    for ref in rule["backendRefs"]:
        own = next((f["urlRewrite"] for f in ref.get("filters", []) if f["type"] == "URLRewrite"), {})
        rewrite = {**shared, **own}
        refs.append((ref["name"], ref["weight"], rewrite["hostname"], rewrite["path"]["replacePrefixMatch"]))
    return refs


@dataclass
class Case:
    name: str
    fleet: Fleet
    refs: list[tuple[str, int, str, str]]
    warnings: list[str]


CASES = [
    Case("Traefik sends the replicas' clusters to / and the provider to its own /openai/, with no warning", TRAEFIK,
         [("chat-external-groq", 2, "api.groq.com", "/openai/"), ("chat-gateway-gpu-a", 1, CHAT_HOST, "/"),
          ("chat-gateway-gpu-b", 1, CHAT_HOST, "/")], []),
    Case("Envoy Gateway rewrites one path for all, so the provider loses /openai/ and the service is warned", ENVOY,
         [("external-groq", 2, "api.groq.com", "/"), ("gateway-gpu-a", 1, CHAT_HOST, "/"),
          ("gateway-gpu-b", 1, CHAT_HOST, "/")], ["per-backend-path-rewrite"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_destination_gets_its_path_only_where_the_backend_can_rewrite_it(case: Case) -> None:
    rendered = mixed(case.fleet)
    assert route_refs(rendered) == case.refs
    assert codes(rendered) == case.warnings


def test_the_cluster_routes_do_not_depend_on_the_fleet_backend() -> None:
    assert mixed(TRAEFIK).clusters == mixed(ENVOY).clusters


@pytest.mark.parametrize("on", [TRAEFIK, METALLB, ENVOY], ids=["Traefik", "Traefik with MetalLB", "Envoy Gateway"])
def test_every_fleet_gateway_object_and_addon_object_validates(on: Fleet) -> None:
    rendered = mixed(on, addresses={"gpu-a": "34.1.2.3"})
    addon_objects = [obj for addon in rendered.addons["gpu-a"] for obj in addon.objects]
    failures = {f"{m['kind']}/{m['metadata']['name']}": found
                for m in [*rendered.gateway, *addon_objects] if (found := problems(m))}
    assert failures == {}


def test_traefik_reaches_each_destination_through_a_service_of_its_own() -> None:
    rendered = mixed(TRAEFIK, addresses={"gpu-a": "34.1.2.3", "gpu-b": "a1.elb.us-west-2.amazonaws.com"})
    services = {m["metadata"]["name"]: m["spec"]["ports"] for m in rendered.gateway if m["kind"] == "Service"}
    assert services == {
        "chat-external-groq": [{"name": "https", "port": 443, "protocol": "TCP", "appProtocol": "https"}],
        "chat-gateway-gpu-a": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}],
        "chat-gateway-gpu-b": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}]}
    slices = {m["metadata"]["name"]: (m["addressType"], m["endpoints"], m["metadata"]["labels"]["kubernetes.io/service-name"])
              for m in rendered.gateway if m["kind"] == "EndpointSlice"}
    ready = {"ready": True}
    assert slices == {
        "chat-external-groq": ("FQDN", [{"addresses": ["api.groq.com"], "conditions": ready}], "chat-external-groq"),
        "chat-gateway-gpu-a": ("IPv4", [{"addresses": ["34.1.2.3"], "conditions": ready}], "chat-gateway-gpu-a"),
        "chat-gateway-gpu-b": ("FQDN", [{"addresses": ["a1.elb.us-west-2.amazonaws.com"], "conditions": ready}],
                               "chat-gateway-gpu-b")}
    assert find(rendered.gateway, "BackendTLSPolicy")["spec"] == {
        "targetRefs": [{"group": "", "kind": "Service", "name": "chat-external-groq"}],
        "validation": {"hostname": "api.groq.com", "wellKnownCACertificates": "System"}}


def test_two_services_on_traefik_never_share_a_backend_service() -> None:
    """Traefik keys a backend's middlewares by Service and port across routes: a shared one would
    carry the other service's Host rewrite."""
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1)), service("code", (QWEN, 1))),
                       fleet=TRAEFIK)
    refs = {route: [ref[0] for ref in route_refs(rendered, route)] for route in ("chat", "code")}
    assert refs == {"chat": ["chat-gateway-gpu-a"], "code": ["code-gateway-gpu-a"]}


def test_traefik_gateway_listens_on_the_web_entry_point_of_its_own_class() -> None:
    gateway = find(mixed(TRAEFIK).gateway, "Gateway")
    assert gateway["spec"] == {"gatewayClassName": "traefik", "listeners": [
        {"name": "web", "protocol": "HTTP", "port": 8000, "allowedRoutes": {"namespaces": {"from": "All"}}}]}


def test_envoy_gateway_output_is_what_it_was_before_backends() -> None:
    """No `backend` (or EnvoyGateway) renders exactly the objects of the fixed Envoy Gateway fleet."""
    assert mixed(ENVOY).files() == compose(deployment("qwen", replicas=2),
                                           services=(service("chat", (QWEN, 1), (GROQ, 1)),),
                                           endpoints=(OPENAI_ROOT,)).files()


def stack(rendered: Rendered, cluster: str = "gpu-a") -> list[tuple[str, str, tuple[str, ...]]]:
    return [(addon.name, str(addon.install), addon.depends_on) for addon in rendered.addons[cluster]]


CRDS = tuple(f"gateway-api-{plural}" for plural in traefik.GATEWAY_API_CRDS)


def test_the_traefik_cluster_gets_gateway_api_crds_first_and_traefik_metallb_last() -> None:
    rendered = mixed(METALLB)
    got = stack(rendered)
    assert got[:8] == [(crd, "manifest", ()) for crd in CRDS]
    assert ("envoy-gateway", "helm", (*CRDS, "gateway-api-inference-extension-crds")) in got
    assert got[-4:] == [("metallb", "helm", ()), ("metallb-address-pool", "objects", ("metallb",)),
                        ("traefik", "helm", (*CRDS, "metallb-address-pool")),
                        ("traefik-gateway-class", "objects", ("traefik",))]
    assert stack(rendered, "gpu-b") == stack(mixed(ENVOY), "gpu-b") == stack(mixed(ENVOY), "gpu-a")


def test_without_metallb_traefik_waits_only_for_the_crds() -> None:
    assert stack(mixed(TRAEFIK))[-2:] == [("traefik", "helm", CRDS), ("traefik-gateway-class", "objects", ("traefik",))]


def addon(rendered: Rendered, name: str) -> Addon:
    return next(a for a in rendered.addons["gpu-a"] if a.name == name)


def test_the_crds_are_the_gateway_api_standard_channel_files_without_the_admission_policy() -> None:
    crd = addon(mixed(TRAEFIK), "gateway-api-httproutes")
    assert (crd.install, crd.version, crd.manifest_url) == (Install.MANIFEST, "v1.5.1", (
        "https://raw.githubusercontent.com/kubernetes-sigs/gateway-api/v1.5.1/config/crd/standard/"
        "gateway.networking.k8s.io_httproutes.yaml"))
    assert not any("vap" in a.name or "safe-upgrades" in a.manifest_url for a in mixed(TRAEFIK).addons["gpu-a"])


@pytest.mark.parametrize("spec, version", [(None, "40.2.0"), ({"version": "39.0.5"}, "39.0.5")],
                         ids=["the pinned chart", "the manifest's traefik.version"])
def test_traefik_chart_version_and_values(spec: dict[str, Any] | None, version: str) -> None:
    chart = addon(mixed(fleet(traefik_spec=spec)), "traefik")
    assert (chart.chart, chart.repository, chart.version, chart.namespace) == (
        "traefik", "https://traefik.github.io/charts", version, "traefik-system")
    assert chart.values == {
        "providers": {"kubernetesGateway": {"enabled": True}, "kubernetesIngress": {"enabled": False}},
        "gateway": {"enabled": False}, "gatewayClass": {"enabled": False},
        "ports": {"web": {"port": 8000, "exposedPort": 80}}}
    assert chart_value_problems("traefik", "40.2.0", dict(chart.values)) == []


def test_the_chart_schema_check_rejects_a_value_the_chart_does_not_have() -> None:
    assert chart_value_problems("traefik", "40.2.0", {"gatewayClass": {"enabled": False, "controller": "x"}}) != []


def test_metallb_pool_and_advertisement() -> None:
    pool = addon(mixed(METALLB), "metallb-address-pool")
    assert [(o["kind"], o["metadata"]["namespace"], o["spec"]) for o in pool.objects] == [
        ("IPAddressPool", "metallb-system", {"addresses": ["172.18.255.200-172.18.255.250"]}),
        ("L2Advertisement", "metallb-system", {"ipAddressPools": ["modelplane"]})]
    chart = addon(mixed(METALLB), "metallb")
    assert (chart.repository, chart.version) == ("https://metallb.github.io/metallb", Settings().metallb_version)


@pytest.mark.parametrize("on", [TRAEFIK, ENVOY], ids=["Traefik", "Envoy Gateway"])
@pytest.mark.parametrize("address", ["34.1.2.3", "2600:1f14::1", "a1.elb.us-west-2.amazonaws.com"])
def test_binding_addresses_later_gives_what_rendering_with_them_gives(on: Fleet, address: str) -> None:
    """The Pulumi layer renders before addresses exist and binds them once they do."""
    later = [bind_addresses(m, {address_placeholder("gpu-b"): address}) for m in mixed(on).gateway]
    assert later == list(mixed(on, addresses={"gpu-b": address}).gateway)
    assert not any(address_placeholder("gpu-b") in str(m) for m in later)


def shares(rendered: Rendered) -> dict[str, Fraction]:
    total = sum(weight for _, weight, _, _ in route_refs(rendered))
    return {name: Fraction(weight, total) for name, weight, _, _ in route_refs(rendered)}


def test_both_backends_split_the_service_alike() -> None:
    traefik_shares, envoy_shares = shares(mixed(TRAEFIK)), shares(mixed(ENVOY))
    assert {name.removeprefix("chat-"): share for name, share in traefik_shares.items()} == envoy_shares
    assert envoy_shares == {"external-groq": Fraction(1, 2), "gateway-gpu-a": Fraction(1, 4),
                            "gateway-gpu-b": Fraction(1, 4)}
