"""Fleet routing: a ModelEndpoint per replica, and each ModelService as a fleet route over cluster routes.

Expected routes come from the routing contract (compose/routing.py) and the Envoy Gateway facts it
cites: one path rewrite, on the rule, to `/`; clusters told apart by Host; hostname-only rewrites
per backendRef. Expected shares come from the ModelService rule, computed here independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import Fleet, ModelDeployment, ModelEndpoint, ModelService
from modelplane.compose import Rendered, address_placeholder
from modelplane.compose.routing import service_host
from modelplane.compose.weights import MAX_WEIGHT, integer_weights
from tests.compose.helpers import FLEET, codes, compose, deployment, engine, external, find, member, service
from tests.compose.schemas import problems

QWEN = {"modelplane.ai/deployment": "qwen"}
HOSTED = {"hosting": "external"}
ON_A = {"modelplane.ai/cluster": "gpu-a"}
KV = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'
CHAT_HOST = service_host("ml", "chat")


def pair(name: str = "pair", replicas: int = 1, **kwargs: object) -> ModelDeployment:
    """A PrefillDecode deployment whose decode engine serves on 8200, clear of the sidecar."""
    return deployment(name, engine("prefill", member(args=[KV]), phase="Prefill"),
                      engine("decode", member(args=[KV, "--port=8200"]), phase="Decode"),
                      mode="PrefillDecode", replicas=replicas, **kwargs)


def duo(replicas: int = 1) -> ModelDeployment:
    """A Unified deployment with two engines: its replica route spreads over two Services."""
    return deployment("duo", engine("left"), engine("right"), replicas=replicas)


def fleet_route(rendered: Rendered, name: str = "chat") -> dict:
    return find([m for m in rendered.gateway if m["metadata"]["name"] == name], "HTTPRoute")


def fleet_refs(rendered: Rendered) -> list[tuple[str, int, str]]:
    """(backend, weight, Host) of each backendRef of the fleet route, in order."""
    rule = fleet_route(rendered)["spec"]["rules"][0]
    shared = rule["filters"][0]["urlRewrite"].get("hostname")
    return [(ref["name"], ref["weight"], shared or ref["filters"][0]["urlRewrite"]["hostname"])
            for ref in rule["backendRefs"]]


def service_routes(rendered: Rendered) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(cluster, Host) -> (backend, weight) of each cluster route of the services."""
    return {(cluster, m["spec"]["hostnames"][0]): [(ref["name"], ref["weight"]) for ref in m["spec"]["rules"][0]["backendRefs"]]
            for cluster, manifests in rendered.clusters.items() for m in manifests
            if m["kind"] == "HTTPRoute" and "modelplane.ai/service" in m["metadata"]["labels"]}


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


def test_replicas_on_two_clusters_share_one_rule_rewrite_of_path_and_host() -> None:
    rendered = compose(deployment("qwen", replicas=2), services=(service("chat", (QWEN, 1)),))
    route = fleet_route(rendered)
    [rule] = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml/chat/"}}]
    assert rule["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}, "hostname": "chat.ml.modelplane.internal"}}]
    assert rule["backendRefs"] == [
        {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "gateway-gpu-a", "weight": 1},
        {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "gateway-gpu-b", "weight": 1}]
    assert rule["timeouts"] == {"request": "0s"}
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                            "name": "fleet", "namespace": "modelplane-system"}]
    assert codes(rendered) == []


def test_a_cluster_route_serves_the_service_host_with_what_the_replica_route_points_at() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1)),))
    cluster = rendered.clusters["gpu-a"]
    route = find(cluster, "HTTPRoute", "chat-service")
    assert route["metadata"] == {"name": "chat-service", "namespace": "ml", "labels": {
        "app.kubernetes.io/managed-by": "modelplane", "modelplane.ai/service": "chat", "modelplane.ai/cluster": "gpu-a"}}
    assert route["spec"] == {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference",
                        "namespace": "modelplane-system"}],
        "hostnames": ["chat.ml.modelplane.internal"],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/v1/"}}],
                   "backendRefs": [{"group": "", "kind": "Service", "name": "qwen-gpu-a-0-qwen", "port": 8000, "weight": 1}],
                   "timeouts": {"request": "0s"}}]}
    replica = find(cluster, "HTTPRoute", "qwen-gpu-a-0")["spec"]["rules"][0]
    assert replica["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml/qwen-gpu-a-0/v1/"}}]
    assert route["spec"]["rules"][0]["backendRefs"] == replica["backendRefs"]


@dataclass
class Case:
    name: str
    deployments: tuple[ModelDeployment, ...]
    groups: tuple[tuple[dict[str, str], int], ...]
    fleet: list[tuple[str, int, str]]
    """(backend, weight, Host) of the fleet route's backendRefs."""
    clusters: dict[tuple[str, str], list[tuple[str, int]]]
    """(cluster, Host) -> (backend, weight) of each cluster route."""
    endpoints: tuple[ModelEndpoint, ...] = ()
    warnings: list[str] = field(default_factory=list)


HOSTED_ROOT = external("hosted", "https://api.example.com/", HOSTED, rewrite="/")
CASES = [
    Case("one group's weight is divided evenly across the replicas it matches",
         (deployment("qwen", replicas=2),), ((QWEN, 5),),
         [("gateway-gpu-a", 1, CHAT_HOST), ("gateway-gpu-b", 1, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 1)], ("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 1)]}),
    # Three replicas spread 2/1: gpu-a's fleet weight is the sum of its two replicas' shares.
    Case("a cluster's fleet weight is the sum of its replicas' shares",
         (deployment("qwen", replicas=3),), ((QWEN, 1),),
         [("gateway-gpu-a", 2, CHAT_HOST), ("gateway-gpu-b", 1, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 1), ("qwen-gpu-a-1-qwen", 1)],
          ("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 1)]}),
    # 90 over two replicas and 10 on the provider: 45/45/10, i.e. 9/9/2.
    Case("90/10 between two replicas and an external endpoint puts hostname-only rewrites on each backendRef",
         (deployment("qwen", replicas=2),), ((QWEN, 90), (HOSTED, 10)),
         [("external-hosted", 2, "api.example.com"), ("gateway-gpu-a", 9, CHAT_HOST), ("gateway-gpu-b", 9, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 9)], ("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 9)]},
         endpoints=(HOSTED_ROOT,)),
    # qwen-gpu-a-0 gets 1/3 + 1 of the two groups, qwen-gpu-a-1 and qwen-gpu-b-0 get 1/3 each: 4:1:1.
    Case("a replica two groups match gets both shares, and its cluster the sum",
         (deployment("qwen", replicas=3),), ((QWEN, 1), ({"modelplane.ai/replica-index": "0", **ON_A}, 1)),
         [("gateway-gpu-a", 5, CHAT_HOST), ("gateway-gpu-b", 1, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 4), ("qwen-gpu-a-1-qwen", 1)],
          ("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 1)]}),
    Case("a service reaches only the clusters that run a replica it selects",
         (deployment("qwen", selector={"zone": "b"}), deployment("other")), ((QWEN, 1),),
         [("gateway-gpu-b", 1, CHAT_HOST)], {("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 1)]}),
    Case("a replica with two Unified engines splits its share evenly over their Services",
         (duo(), deployment("qwen", selector={"zone": "b"})), (({"modelplane.ai/deployment": "duo"}, 1), (QWEN, 1)),
         [("gateway-gpu-a", 2, CHAT_HOST), ("gateway-gpu-b", 2, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("duo-gpu-a-0-left", 1), ("duo-gpu-a-0-right", 1)],
          ("gpu-b", CHAT_HOST): [("qwen-gpu-b-0-qwen", 2)]}),
    Case("a PrefillDecode replica alone on its cluster is the service route's one InferencePool",
         (pair(),), (({"modelplane.ai/deployment": "pair"}, 1),),
         [("gateway-gpu-a", 1, CHAT_HOST)], {("gpu-a", CHAT_HOST): [("pair-gpu-a-0", 1)]}),
    # Envoy AI Gateway takes one InferencePool per rule and nothing beside it, so each pair that
    # shares its cluster gets a Host of its own; the fleet route reaches gpu-a once per Host.
    Case("PrefillDecode replicas sharing a cluster each get their own Host and cluster route",
         (pair(replicas=3), deployment("qwen", selector={"zone": "a"})),
         (({"modelplane.ai/deployment": "pair"}, 3), (QWEN, 1)),
         [("gateway-gpu-a", 1, CHAT_HOST), ("gateway-gpu-a", 1, f"pair-gpu-a-0.{CHAT_HOST}"),
          ("gateway-gpu-a", 1, f"pair-gpu-a-1.{CHAT_HOST}"), ("gateway-gpu-b", 1, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 1)],
          ("gpu-a", f"pair-gpu-a-0.{CHAT_HOST}"): [("pair-gpu-a-0", 1)],
          ("gpu-a", f"pair-gpu-a-1.{CHAT_HOST}"): [("pair-gpu-a-1", 1)],
          ("gpu-b", CHAT_HOST): [("pair-gpu-b-0", 1)]}),
    Case("an external endpoint alone keeps its own API root on the rule, with its host",
         (), ((HOSTED, 1),), [("external-hosted", 1, "api.example.com")], {},
         endpoints=(external("hosted", "https://api.example.com/openai/", HOSTED),)),
    Case("an external endpoint rooted below / beside replicas gets / and a warning",
         (deployment("qwen"),), ((QWEN, 1), (HOSTED, 1)),
         [("external-hosted", 1, "api.example.com"), ("gateway-gpu-a", 1, CHAT_HOST)],
         {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 1)]},
         endpoints=(external("hosted", "https://api.example.com/v1/", HOSTED, rewrite="/v1/"),),
         warnings=["per-backend-path-rewrite"]),
    Case("a group that selects nothing is warned about and gets no share",
         (deployment("qwen"),), ((QWEN, 1), ({"absent": "x"}, 9)),
         [("gateway-gpu-a", 1, CHAT_HOST)], {("gpu-a", CHAT_HOST): [("qwen-gpu-a-0-qwen", 1)]},
         warnings=["service-selects-nothing"]),
]


def render_case(case: Case) -> Rendered:
    return compose(*case.deployments, services=(service("chat", *case.groups),), endpoints=case.endpoints)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_routes(case: Case) -> None:
    rendered = render_case(case)
    assert fleet_refs(rendered) == case.fleet
    assert service_routes(rendered) == case.clusters
    assert codes(rendered) == case.warnings


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fleet_route_rewrites_the_path_once_on_the_rule_and_never_per_backend(case: Case) -> None:
    rule = fleet_route(render_case(case))["spec"]["rules"][0]
    rewrites = [f["urlRewrite"] for f in rule["filters"] if f["type"] == "URLRewrite"]
    assert len(rewrites) == 1
    clusters = any(ref["name"].startswith("gateway-") for ref in rule["backendRefs"])
    assert rewrites[0]["path"] == {"type": "ReplacePrefixMatch",
                                   "replacePrefixMatch": "/" if clusters else "/openai/"}
    for ref in rule["backendRefs"]:
        assert all(f == {"type": "URLRewrite", "urlRewrite": {"hostname": f["urlRewrite"]["hostname"]}}
                   for f in ref.get("filters", []))
    assert ("hostname" in rewrites[0]) == all("filters" not in ref for ref in rule["backendRefs"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_routing_object_validates(case: Case) -> None:
    rendered = render_case(case)
    routes = [m for ms in rendered.clusters.values() for m in ms if m["kind"] == "HTTPRoute"]
    assert {m["metadata"]["name"]: found for m in [*rendered.gateway, *routes] if (found := problems(m))} == {}


def end_to_end(rendered: Rendered) -> dict[str, Fraction]:
    """Each replica's (by name) or external Backend's share of the service as the routes split it:
    fleet weight / fleet total x cluster route weight / cluster route total."""
    routes = {m["metadata"]["name"]: m for ms in rendered.clusters.values() for m in ms if m["kind"] == "HTTPRoute"}
    replica_of = {ref["name"]: name for name, m in routes.items() if "modelplane.ai/service" not in m["metadata"]["labels"]
                  for ref in m["spec"]["rules"][0]["backendRefs"]}
    refs = fleet_refs(rendered)
    total = sum(weight for _, weight, _ in refs)
    shares: dict[str, Fraction] = {}
    for backend, weight, host in refs:
        if not backend.startswith("gateway-"):
            shares[backend] = Fraction(weight, total)
            continue
        [leaves] = [leaves for (cluster, route_host), leaves in service_routes(rendered).items()
                    if route_host == host and backend == f"gateway-{cluster}"]
        for ref, leaf in leaves:
            replica = replica_of[ref]
            shares[replica] = shares.get(replica, Fraction(0)) + Fraction(weight, total) * Fraction(
                leaf, sum(w for _, w in leaves))
    return shares


def rule_shares(rendered: Rendered, service_: ModelService, endpoints: tuple[ModelEndpoint, ...]) -> dict[str, Fraction]:
    """The ModelService rule, straight from its wording: each group's weight split evenly over what it
    selects; an endpoint two groups match gets both shares; then normalised."""
    candidates = {e["metadata"]["name"]: e["metadata"]["labels"] for e in rendered.endpoints}
    candidates |= {f"external-{e.name}": dict(e.metadata.labels) for e in endpoints}
    raw: dict[str, Fraction] = {}
    for group in service_.spec.endpoints:
        matched = [name for name, labels in candidates.items() if group.selector.matches(labels)]
        for name in matched:
            raw[name] = raw.get(name, Fraction(0)) + Fraction(group.weight, len(matched))
    total = sum(raw.values())
    return {name: share / total for name, share in raw.items()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_replica_gets_its_rule_share_end_to_end(case: Case) -> None:
    rendered = render_case(case)
    assert end_to_end(rendered) == rule_shares(rendered, service("chat", *case.groups), case.endpoints)


SELECTORS = {"qwen": QWEN, "duo": {"modelplane.ai/deployment": "duo"}, "pair": {"modelplane.ai/deployment": "pair"},
             "on-a": ON_A, "first": {"modelplane.ai/replica-index": "0"}, "hosted": HOSTED}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qwen=st.integers(0, 4), duos=st.integers(0, 2), pairs=st.integers(0, 2), hosted=st.booleans(),
       groups=st.lists(st.tuples(st.sampled_from(sorted(SELECTORS)), st.integers(1, 1000)), min_size=1, max_size=4))
def test_end_to_end_shares_match_the_rule_for_any_mix(qwen: int, duos: int, pairs: int, hosted: bool,
                                                       groups: list[tuple[str, int]]) -> None:
    deployments = (*([deployment("qwen", replicas=qwen)] if qwen else []), *([duo(duos)] if duos else []),
                   *([pair(replicas=pairs)] if pairs else []))
    endpoints = (HOSTED_ROOT,) if hosted else ()
    chat = service("chat", *((SELECTORS[key], weight) for key, weight in groups))
    rendered = compose(*deployments, services=(chat,), endpoints=endpoints)
    want = rule_shares(rendered, chat, endpoints)
    if not want:
        assert "service-empty" in codes(rendered)
        return
    assert end_to_end(rendered) == want


def test_cluster_routes_exist_only_where_a_selected_replica_runs() -> None:
    rendered = compose(deployment("qwen", selector={"zone": "a"}), deployment("other", selector={"zone": "b"}),
                       services=(service("chat", (QWEN, 1)),))
    assert [m["metadata"]["name"] for m in rendered.clusters["gpu-b"] if m["kind"] == "HTTPRoute"] == ["other-gpu-b-0"]
    assert [m["metadata"]["name"] for m in rendered.clusters["gpu-a"] if m["kind"] == "HTTPRoute"] == [
        "chat-service", "qwen-gpu-a-0"]


def test_an_external_endpoint_is_an_fqdn_backend_with_tls_and_its_own_host() -> None:
    rendered = compose(services=(service("chat", (HOSTED, 1)),),
                       endpoints=(external("hosted", "https://api.example.com/openai/", HOSTED),))
    assert find(rendered.gateway, "Backend", "hosted")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "api.example.com", "port": 443}}]}
    assert find(rendered.gateway, "BackendTLSPolicy", "hosted")["spec"] == {
        "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "external-hosted"}],
        "validation": {"hostname": "api.example.com", "wellKnownCACertificates": "System"}}
    assert fleet_route(rendered)["spec"]["rules"][0]["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/openai/"}, "hostname": "api.example.com"}}]
    assert codes(rendered) == []


def test_the_path_warning_names_the_endpoint_and_the_fix() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1), (HOSTED, 1)),),
                       endpoints=(external("hosted", "https://api.example.com/v1/", HOSTED),))
    [warning] = [w for w in rendered.warnings if w.code != "plain-http-gateway"]
    assert warning.code == "per-backend-path-rewrite"
    assert "hosted (/v1/)" in warning.message and "Envoy Gateway cannot rewrite the path per backend" in warning.message
    assert "url: https://host/ with rewritePath: /" in warning.message and "ModelService of its own" in warning.message


def test_a_service_with_no_endpoint_is_not_published() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", ({"absent": "x"}, 1)),))
    assert [m["kind"] for m in rendered.gateway] == ["Gateway"]
    assert [m["metadata"]["name"] for m in rendered.clusters["gpu-a"] if m["kind"] == "HTTPRoute"] == ["qwen-gpu-a-0"]
    assert codes(rendered) == ["service-empty", "service-selects-nothing"]


def test_without_an_inference_gateway_services_get_no_routes_and_a_warning() -> None:
    rendered = compose(deployment("qwen"), services=(service("chat", (QWEN, 1)),),
                       fleet=Fleet(clusters=FLEET.clusters, classes=FLEET.classes))
    assert rendered.gateway == ()
    assert service_routes(rendered) == {}
    assert codes(rendered) == ["no-fleet-gateway"]


def test_the_fleet_gateway_creates_service_namespaces_its_cluster_lacks() -> None:
    rendered = compose(deployment("qwen", selector={"zone": "b"}), services=(service("chat", (QWEN, 1)),))
    assert [m["metadata"]["name"] for m in rendered.gateway if m["kind"] == "Namespace"] == ["ml"]
    hosted = compose(deployment("qwen", selector={"zone": "a"}), services=(service("chat", (QWEN, 1)),))
    assert [m for m in hosted.gateway if m["kind"] == "Namespace"] == []


INTEGER_CASES = [
    ("equal shares are 1 each", [[Fraction(1, 2)], [Fraction(1, 2)]], [[1], [1]]),
    ("thirds and a half become the smallest integers in one scale across targets",
     [[Fraction(1, 3), Fraction(1, 3)], [Fraction(1, 2)]], [[2, 2], [3]]),
    # 10^7 : 1 is scaled so the largest target sums to at most 1,000,000 - 2 leaves.
    ("a ratio beyond 1,000,000 is scaled down, never to 0",
     [[Fraction(10**7)], [Fraction(1)]], [[MAX_WEIGHT - 2], [1]]),
    # Two leaves of 10^7 under one target: each leaf fits, but their sum must too.
    ("a target whose leaves sum past 1,000,000 is scaled down with them",
     [[Fraction(10**7), Fraction(10**7)], [Fraction(1)]], [[499_998, 499_998], [1]]),
]


@pytest.mark.parametrize(("shares", "want"), [c[1:] for c in INTEGER_CASES], ids=[c[0] for c in INTEGER_CASES])
def test_integer_weights(shares: list[list[Fraction]], want: list[list[int]]) -> None:
    assert integer_weights(shares) == want


@given(st.lists(st.lists(st.fractions(min_value=Fraction(1, 10**4), max_value=10**7, max_denominator=10**4), min_size=1, max_size=5),
                min_size=1, max_size=6))
def test_integer_weights_are_positive_and_every_target_sum_fits(shares: list[list[Fraction]]) -> None:
    weights = integer_weights(shares)
    assert [len(target) for target in weights] == [len(target) for target in shares]
    assert all(weight >= 1 for target in weights for weight in target)
    assert all(sum(target) <= MAX_WEIGHT for target in weights)
