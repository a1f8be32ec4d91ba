"""Fleet routing: a ModelEndpoint per replica, and each ModelService as one weighted route."""

from __future__ import annotations

from fractions import Fraction

import pytest

from modelplane.api import Fleet
from modelplane.compose import address_placeholder
from modelplane.compose.routing import MAX_WEIGHT, integer_weights
from tests.compose.helpers import FLEET, codes, compose, deployment, external, find, service

QWEN = {"modelplane.ai/deployment": "qwen"}
HOSTED = {"hosting": "external"}


def route(rendered: object) -> dict:
    return find(rendered.gateway, "HTTPRoute")  # type: ignore[attr-defined]


def weights(rendered: object) -> list[tuple[str, int]]:
    """(backend, weight) in endpoint-name order (the external `hosted` sorts before `qwen-...`)."""
    return [(ref["name"], ref["weight"]) for ref in route(rendered)["spec"]["rules"][0]["backendRefs"]]


def test_each_placed_replica_has_an_endpoint_under_its_cluster_gateway() -> None:
    rendered = compose(deployment("qwen", replicas=2, labels={"team.example.com/model": "qwen"}),
                       addresses={"gpu-a": "34.1.2.3"})
    assert [(e["metadata"]["name"], e["spec"]["url"], e["spec"]["rewritePath"]) for e in rendered.endpoints] == [
        ("qwen-gpu-a-0", "http://34.1.2.3/ml/qwen-gpu-a-0/", "/ml/qwen-gpu-a-0/"),
        ("qwen-gpu-b-0", f"http://{address_placeholder('gpu-b')}/ml/qwen-gpu-b-0/", "/ml/qwen-gpu-b-0/")]
    assert rendered.endpoints[1]["metadata"]["labels"] == {
        "team.example.com/model": "qwen", "app.kubernetes.io/managed-by": "modelplane",
        "modelplane.ai/deployment": "qwen", "modelplane.ai/cluster": "gpu-b", "modelplane.ai/replica-index": "0"}


def test_a_cluster_gateway_backend_holds_the_address_or_its_placeholder() -> None:
    rendered = compose(deployment("qwen", replicas=2), services=(service("chat", (QWEN, 1)),),
                       addresses={"gpu-a": "34.1.2.3"})
    assert find(rendered.gateway, "Backend", "gpu-a")["spec"] == {"endpoints": [{"ip": {"address": "34.1.2.3", "port": 80}}]}
    assert find(rendered.gateway, "Backend", "gpu-b")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": address_placeholder("gpu-b"), "port": 80}}]}


def test_one_endpoint_gets_the_rewrite_on_the_rule_where_envoy_gateway_applies_it() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1)),))
    rule = route(rendered)["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml/chat/"}}]
    assert rule["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/ml/qwen-gpu-a-0/"}}}]
    assert rule["backendRefs"] == [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "gateway-gpu-a", "weight": 1}]
    assert rule["timeouts"] == {"request": "0s"}
    assert route(rendered)["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                                      "name": "fleet", "namespace": "modelplane-system"}]
    assert codes(rendered) == []


def test_endpoints_with_different_paths_get_per_backend_rewrites_and_a_warning() -> None:
    rendered = compose(deployment("qwen", replicas=2), services=(service("chat", (QWEN, 1)),))
    refs = route(rendered)["spec"]["rules"][0]["backendRefs"]
    assert [ref["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] for ref in refs] == [
        "/ml/qwen-gpu-a-0/", "/ml/qwen-gpu-b-0/"]
    assert "filters" not in route(rendered)["spec"]["rules"][0]
    assert codes(rendered) == ["per-backend-path-rewrite"]


WEIGHT_CASES = [
    ("one group's weight is divided evenly across the endpoints it matches",
     [(QWEN, 5)], [("gateway-gpu-a", 1), ("gateway-gpu-b", 1)]),
    ("90/10 between two replicas and an external endpoint is 45/45/10",
     [(QWEN, 90), (HOSTED, 10)], [("hosted", 2), ("gateway-gpu-a", 9), ("gateway-gpu-b", 9)]),
    ("an endpoint two groups match gets both shares",
     [(QWEN, 1), ({"modelplane.ai/cluster": "gpu-a"}, 1)], [("gateway-gpu-a", 3), ("gateway-gpu-b", 1)]),
]


@pytest.mark.parametrize(("groups", "want"), [c[1:] for c in WEIGHT_CASES], ids=[c[0] for c in WEIGHT_CASES])
def test_weights(groups: list[tuple[dict, int]], want: list[tuple[str, int]]) -> None:
    rendered = compose(deployment("qwen", replicas=2), services=(service("chat", *groups),),
                       endpoints=(external("hosted", "https://api.example.com/v1/", HOSTED, rewrite="/v1/"),))
    assert weights(rendered) == want


def test_an_external_endpoint_is_an_fqdn_backend_with_tls_and_its_own_host_and_path() -> None:
    rendered = compose(services=(service("chat", (HOSTED, 1)),),
                       endpoints=(external("hosted", "https://api.example.com/openai/", HOSTED),))
    assert find(rendered.gateway, "Backend", "hosted")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "api.example.com", "port": 443}}],
        "tls": {"wellKnownCACertificates": "System"}}
    assert route(rendered)["spec"]["rules"][0]["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/openai/"}, "hostname": "api.example.com"}}]


def test_a_group_that_selects_nothing_is_warned_about_and_gets_no_share() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1), ({"absent": "x"}, 9)),))
    assert weights(rendered) == [("gateway-gpu-a", 1)]
    assert codes(rendered) == ["service-selects-nothing"]


def test_a_service_with_no_endpoint_is_not_published() -> None:
    rendered = compose(services=(service("chat", (QWEN, 1)),))
    assert [m["kind"] for m in rendered.gateway] == ["Gateway"]
    assert codes(rendered) == ["service-empty", "service-selects-nothing"]


def test_without_an_inference_gateway_services_are_warned_about() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1)),),
                       fleet=Fleet(clusters=FLEET.clusters, classes=FLEET.classes))
    assert rendered.gateway == ()
    assert codes(rendered) == ["no-fleet-gateway"]


def test_the_fleet_gateway_creates_service_namespaces_its_cluster_lacks() -> None:
    rendered = compose(deployment("qwen", selector={"zone": "b"}), services=(service("chat", (QWEN, 1)),))
    assert [m["metadata"]["name"] for m in rendered.gateway if m["kind"] == "Namespace"] == ["ml"]
    hosted = compose(deployment("qwen", selector={"zone": "a"}), services=(service("chat", (QWEN, 1)),))
    assert [m for m in hosted.gateway if m["kind"] == "Namespace"] == []


INTEGER_CASES = [
    ("equal shares are 1 each", {"a": Fraction(1, 2), "b": Fraction(1, 2)}, {"a": 1, "b": 1}),
    ("thirds and a half become the smallest integers", {"a": Fraction(1, 3), "b": Fraction(1, 2)}, {"a": 2, "b": 3}),
    ("a ratio beyond 1,000,000 is scaled down, never to 0",
     {"a": Fraction(10**7), "b": Fraction(1)}, {"a": MAX_WEIGHT, "b": 1}),
]


@pytest.mark.parametrize(("shares", "want"), [c[1:] for c in INTEGER_CASES], ids=[c[0] for c in INTEGER_CASES])
def test_integer_weights(shares: dict[str, Fraction], want: dict[str, int]) -> None:
    assert integer_weights(shares) == want
