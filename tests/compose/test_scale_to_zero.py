"""Scale to zero (`spec.replicas: 0`): the service keeps its fleet route, the cache stays staged, and
scaling up places as usual.

Expected objects come from the contract in compose/idle.py and Gateway API (an HTTPRoute whose one
backendRef is a core Service; that Service has no selector and no EndpointSlice, so it has no
endpoints); every object is checked against the published schemas.
"""

from __future__ import annotations

from modelplane.compose.idle import REASON
from tests.compose.helpers import codes, compose, deployment, everything, find, model_cache, service
from tests.compose.schemas import problems

QWEN = {"modelplane.ai/deployment": "qwen"}


def test_a_service_over_a_deployment_at_zero_keeps_its_route_to_a_service_without_endpoints() -> None:
    rendered = compose(deployment("qwen", replicas=0), services=(service("chat", (QWEN, 1)),))
    route = find(rendered.gateway, "HTTPRoute", "chat")
    assert route["spec"]["rules"] == [{"matches": [{"path": {"type": "PathPrefix", "value": "/ml/chat/"}}],
                                       "backendRefs": [{"group": "", "kind": "Service", "name": "chat-scaled-to-zero",
                                                        "port": 80, "weight": 1}]}]
    placeholder = find(rendered.gateway, "Service", "chat-scaled-to-zero")
    assert "selector" not in placeholder["spec"] and "qwen" in placeholder["metadata"]["annotations"][REASON]
    assert not any(m["kind"] == "EndpointSlice" for m in everything(rendered))
    assert rendered.endpoints == () and codes(rendered) == []
    assert [p for m in rendered.gateway for p in problems(m)] == []


def test_a_deployment_at_zero_runs_nothing_but_its_cache_stays_staged() -> None:
    rendered = compose(deployment("qwen", replicas=0, cache="weights"), caches=(model_cache("weights"),))
    workloads = [m for m in everything(rendered) if m["kind"] in ("Deployment", "LeaderWorkerSet")]
    assert workloads == []
    staged = {cluster for cluster, manifests in rendered.clusters.items()
              if any(m["kind"] == "Job" for m in manifests)}
    assert staged == set(rendered.clusters)


def test_scaling_up_replaces_the_placeholder_under_the_same_route_name() -> None:
    at_zero = compose(deployment("qwen", replicas=0), services=(service("chat", (QWEN, 1)),))
    scaled = compose(deployment("qwen", replicas=1), services=(service("chat", (QWEN, 1)),))
    assert find(scaled.gateway, "HTTPRoute", "chat")["metadata"] == find(at_zero.gateway, "HTTPRoute", "chat")["metadata"]
    assert not any(m["metadata"]["name"] == "chat-scaled-to-zero" for m in scaled.gateway)
    assert [e["metadata"]["name"] for e in scaled.endpoints] == ["qwen-gpu-a-0"]


def test_a_running_deployment_takes_all_traffic_while_another_is_at_zero() -> None:
    rendered = compose(deployment("qwen", replicas=0), deployment("other"),
                       services=(service("chat", (QWEN, 1), ({"modelplane.ai/deployment": "other"}, 1)),))
    refs = find(rendered.gateway, "HTTPRoute", "chat")["spec"]["rules"][0]["backendRefs"]
    assert [ref["kind"] for ref in refs] == ["Backend"]
    assert codes(rendered) == []


def test_a_selector_matching_no_deployment_at_all_still_warns() -> None:
    rendered = compose(deployment("qwen", replicas=0), services=(service("chat", ({"absent": "x"}, 1)),))
    assert codes(rendered) == ["service-empty", "service-selects-nothing"]
    assert not any(m["kind"] == "HTTPRoute" for m in rendered.gateway)
