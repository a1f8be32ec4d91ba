"""Attacks on the hop from the fleet gateway to each cluster, and on the engines behind it (issue 23).

Expected values come from the issue ("every hop authenticated", "/v1/... only", "a NetworkPolicy per
model namespace", "Backend API only where needed") and from the published APIs: Envoy Gateway v1.7's
EnvoyProxy `backendTLS.clientCertificateRef` and ClientTrafficPolicy `tls.clientValidation` (its
"Backend Mutual TLS" and "Mutual TLS: External Clients" tasks), Gateway API's PathPrefix matching
(element-wise prefix of the path), the proxy pods' `owning-gateway-*` labels (Envoy Gateway v1.7
internal/gatewayapi/translator.go). The fleet is examples/multi-cloud, which shows the secured gateway.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from modelplane.api import CONTROL_CLUSTER, ManifestErrors, load, load_sources
from modelplane.compose import Rendered, render
from modelplane.scheduling import place
from tests.compose.helpers import find
from tests.compose.schemas import problems

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "multi-cloud"
CLIENT = "    clientCertificateSecret: fleet-gateway-client\n"
CLUSTERS = ("eks-us-west", "gke-us-central", "onprem-us-east")
OPEN_ONPREM = ("    modelplane.ai/tier: production\nspec:\n",
               "    modelplane.ai/tier: production\nspec:\n  gateway: {publicInference: true}\n")


def sources(*edits: tuple[str, str]) -> list[tuple[str, str]]:
    """The multi-cloud manifests with each (old, new) replacement applied (each must apply)."""
    texts = {str(p): p.read_text() for p in sorted(DEMO.glob("*.yaml"))}
    for old, new in edits:
        assert any(old in text for text in texts.values()), old
        texts = {name: text.replace(old, new) for name, text in texts.items()}
    return list(texts.items())


@cache
def rendered(*edits: tuple[str, str]) -> Rendered:
    manifests = load_sources(sources(*edits))
    return render(manifests, place(manifests.fleet, manifests.workloads))


def inference_objects(out: Rendered, cluster: str) -> list[dict]:
    [addon] = [a for a in out.addons[cluster] if a.name == "inference-gateway"]
    return list(addon.objects)


def test_the_fleet_gateway_presents_its_client_certificate_to_the_clusters() -> None:
    gateway = rendered().gateway
    assert find(gateway, "Gateway", "fleet")["spec"]["infrastructure"] == {
        "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": "fleet"}}
    proxy = find(gateway, "EnvoyProxy", "fleet")
    assert (proxy["metadata"]["namespace"], proxy["spec"]) == ("modelplane-system", {
        "backendTLS": {"clientCertificateRef": {"group": "", "kind": "Secret", "name": "fleet-gateway-client"}}})
    client = find(gateway, "Certificate", "fleet-gateway-client")["spec"]
    assert client == {"secretName": "fleet-gateway-client", "dnsNames": ["fleet.clusters.example.com"],
                      "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "fleet-ca"},
                      "usages": ["client auth", "digital signature", "key encipherment"]}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_clusters_gateway_requires_a_client_certificate_of_the_fleets_ca(cluster: str) -> None:
    ca = load([DEMO]).fleet.gateway.spec.cluster_tls.ca_certificates
    objects = inference_objects(rendered(), cluster)
    policy = find(objects, "ClientTrafficPolicy", "inference-clients")
    assert (policy["metadata"]["namespace"], policy["spec"]) == ("modelplane-system", {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference"}],
        "tls": {"clientValidation": {"caCertificateRefs": [
            {"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]}}})
    config = find(objects, "ConfigMap", "modelplane-clusters-ca")
    assert (config["metadata"]["namespace"], config["data"]) == ("modelplane-system", {"ca.crt": ca})
    assert find(objects, "Gateway", "inference")["spec"]["listeners"][0]["protocol"] == "HTTPS", \
        "client validation needs a TLS listener"


def test_every_new_object_validates_against_its_published_schema() -> None:
    out = rendered()
    objects = [*out.gateway, *(o for cluster in CLUSTERS for o in inference_objects(out, cluster)),
               *(m for ms in out.clusters.values() for m in ms if m["kind"] == "NetworkPolicy")]
    kinds = {m["kind"] for m in objects}
    assert {"EnvoyProxy", "ClientTrafficPolicy", "Certificate", "NetworkPolicy"} <= kinds
    assert {f"{m['kind']}/{m['metadata']['name']}": problems(m) for m in objects} == {
        f"{m['kind']}/{m['metadata']['name']}": [] for m in objects}


def test_a_cluster_that_says_public_inference_is_left_open_and_warned_about() -> None:
    out = rendered(OPEN_ONPREM)
    assert [o["kind"] for o in inference_objects(out, "onprem-us-east")
            if o["kind"] in ("ClientTrafficPolicy", "ConfigMap")] == []
    assert find(inference_objects(out, "eks-us-west"), "ClientTrafficPolicy", "inference-clients")
    assert load_sources(sources(OPEN_ONPREM)).warnings == (), "said once, by compose with the gateway's warnings"
    assert [(w.code, w.subject, w.path) for w in out.warnings] == [
        ("public-inference", "InferenceCluster onprem-us-east", "spec.gateway.publicInference")]


def errors_of(*edits: tuple[str, str]) -> list[tuple[str, str, str]]:
    with pytest.raises(ManifestErrors) as raised:
        load_sources(sources(*edits))
    return [(e.code, e.subject, e.path) for e in raised.value.errors]


def test_a_tls_hop_without_a_client_certificate_is_an_error_at_every_cluster_not_opened() -> None:
    assert errors_of((CLIENT, "")) == [
        ("unauthenticated-cluster-gateway", f"InferenceCluster {cluster}", "spec.gateway.publicInference")
        for cluster in ("gke-us-central", "eks-us-west", "onprem-us-east")]  # in file order


@pytest.mark.parametrize("edits, want", [
    pytest.param(((CLIENT, ""), OPEN_ONPREM), "gke-us-central and eks-us-west are still closed", id="one opened"),
])
def test_opening_one_cluster_leaves_the_others_required(edits: tuple, want: str) -> None:
    assert {obj for _, obj, _ in errors_of(*edits)} == {"InferenceCluster gke-us-central", "InferenceCluster eks-us-west"}, want


def test_a_client_certificate_needs_the_private_ca_that_signs_it() -> None:
    text = dict(sources())[str(DEMO / "fleet.yaml")]
    ca_block = text[text.index("    caCertificates: |"):]
    assert errors_of((ca_block, "")) == [("value_error", "InferenceGateway fleet", "spec.clusterTLS.caCertificates")]


TRAEFIK = ("  auth:                                  # and send `Authorization: Bearer <key>`\n"
           "    apiKeysSecret: fleet-api-keys        # an Opaque Secret in modelplane-system: client id -> API key\n",
           "  backend: Traefik\n")
"""The multi-cloud gateway on Traefik (which has no API keys, so `auth` goes)."""
HOP_SERVICE = "modelplane-hop.envoy-gateway-system.svc"
"""The ClusterIP Service Envoy Gateway makes for the hop: `envoyService.name` in its own namespace."""
HOP_SELECTOR = {"gateway.envoyproxy.io/owning-gateway-name": "modelplane-hop",
                "gateway.envoyproxy.io/owning-gateway-namespace": "modelplane-system"}


def test_a_traefik_fleet_gateway_reaches_the_clusters_through_a_hop_that_presents_its_certificate() -> None:
    """Traefik v3.7's Gateway API provider presents no client certificate (its ServersTransport from a
    BackendTLSPolicy has none), so an Envoy Gateway proxy on the same cluster, reachable only from Traefik's
    pods, presents it: the EnvoyGateway fleet gateway's objects, behind a ClusterIP Service."""
    gateway = rendered(TRAEFIK).gateway
    assert find(gateway, "EnvoyProxy", "modelplane-hop") == {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyProxy",
        "metadata": {"name": "modelplane-hop", "namespace": "modelplane-system",
                     "labels": {"app.kubernetes.io/managed-by": "modelplane"}},
        "spec": {"backendTLS": {"clientCertificateRef": {"group": "", "kind": "Secret", "name": "fleet-gateway-client"}},
                 "provider": {"type": "Kubernetes",
                              "kubernetes": {"envoyService": {"type": "ClusterIP", "name": "modelplane-hop"}}}}}
    assert find(gateway, "Gateway", "modelplane-hop")["spec"] == {
        "gatewayClassName": "modelplane",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080, "allowedRoutes": {"namespaces": {
            "from": "Selector", "selector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}]}}}}],
        "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                                             "name": "modelplane-hop"}}}
    policy = find(gateway, "NetworkPolicy", "modelplane-hop")
    assert (policy["metadata"]["namespace"], policy["spec"]) == ("envoy-gateway-system", {
        "podSelector": {"matchLabels": HOP_SELECTOR}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "traefik-system"}}}]}]})
    assert "Namespace" not in {m["kind"] for m in gateway if m["metadata"]["name"] == "envoy-gateway-system"}, \
        "the chart's namespace is never a stack's"
    assert [m["metadata"]["name"] for m in gateway if m["kind"] == "EnvoyProxy"] == ["modelplane-hop"]


def replace_prefix(path: str, prefix: str, replacement: str) -> str:
    """Gateway API ReplacePrefixMatch of a PathPrefix match (both ending in `/` here)."""
    assert path.startswith(prefix), (path, prefix)
    return replacement + path[len(prefix):]


@pytest.mark.parametrize("cluster", ["eks-us-west", "gke-us-central"])
def test_a_request_walks_from_traefik_through_the_hop_to_the_clusters_openai_api(cluster: str) -> None:
    """/ml-team/qwen3/v1/chat/completions, followed object by object: Traefik's backendRef to the cluster
    sends it in plain HTTP to the hop's Service under /ml-team/gateway-<cluster>/ with the service's Host; the
    hop's route for that prefix strips it and reaches the cluster's Backend over TLS checked as
    <cluster>.clusters.example.com against the fleet's CA; the cluster's route for that Host serves /v1/."""
    out = rendered(TRAEFIK)
    ca = load([DEMO]).fleet.gateway.spec.cluster_tls.ca_certificates
    [rule] = find(out.gateway, "HTTPRoute", "qwen3")["spec"]["rules"]
    [ref] = [r for r in rule["backendRefs"] if r["name"] == f"qwen3-gateway-{cluster}"]
    [rewrite] = [f["urlRewrite"] for f in ref["filters"]]
    endpoints = find(out.gateway, "EndpointSlice", ref["name"])
    assert (endpoints["addressType"], endpoints["endpoints"][0]["addresses"], endpoints["ports"][0]["port"],
            ref["port"]) == ("FQDN", [HOP_SERVICE], 8080, 8080)
    assert endpoints["ports"][0]["appProtocol"] == "http", "plain HTTP inside the cluster, to the hop"
    path = replace_prefix("/ml-team/qwen3/v1/chat/completions", rule["matches"][0]["path"]["value"],
                          rewrite["path"]["replacePrefixMatch"])
    assert (path, rewrite["hostname"]) == (f"/ml-team/gateway-{cluster}/v1/chat/completions",
                                           "qwen3.ml-team.modelplane.internal")
    [hop_rule] = find(out.gateway, "HTTPRoute", f"modelplane-hop-gateway-{cluster}")["spec"]["rules"]
    [hop_rewrite] = [f["urlRewrite"] for f in hop_rule["filters"]]
    assert "hostname" not in hop_rewrite, "the Host stays: the cluster's gateway routes on it"
    path = replace_prefix(path, hop_rule["matches"][0]["path"]["value"], hop_rewrite["path"]["replacePrefixMatch"])
    assert (path, hop_rule["timeouts"]) == ("/v1/chat/completions", {"request": "0s"})
    [backend_ref] = hop_rule["backendRefs"]
    backend = find(out.gateway, "Backend", backend_ref["name"])
    assert backend["spec"]["endpoints"][0]["fqdn"]["port"] == 443
    [tls_policy] = [m for m in out.gateway if m["kind"] == "BackendTLSPolicy"
                    and m["spec"]["targetRefs"][0]["name"] == backend["metadata"]["name"]]
    assert tls_policy["spec"]["validation"] == {
        "hostname": f"{cluster}.clusters.example.com",
        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "modelplane-clusters-ca"}]}
    assert find(out.gateway, "ConfigMap", "modelplane-clusters-ca")["data"] == {"ca.crt": ca}
    served = [r for r in out.clusters[cluster] if r["kind"] == "HTTPRoute"
              and r["spec"].get("hostnames") == ["qwen3.ml-team.modelplane.internal"]]
    assert served and all(prefix_matches(m["path"]["value"], path)
                          for r in served for rule in r["spec"]["rules"] for m in rule["matches"])


def test_traefik_checks_only_the_external_endpoints_certificate_itself() -> None:
    out = rendered(TRAEFIK)
    targets = {m["spec"]["targetRefs"][0]["kind"] + "/" + m["spec"]["targetRefs"][0]["name"]
               for m in out.gateway if m["kind"] == "BackendTLSPolicy"}
    assert targets == {"Service/qwen3-external-qwen3-8b-hosted", "Backend/gateway-eks-us-west",
                       "Backend/gateway-gke-us-central"}


def test_the_hops_objects_validate_against_their_published_schemas() -> None:
    objects = rendered(TRAEFIK).gateway
    assert {f"{m['kind']}/{m['metadata']['name']}": problems(m) for m in objects} == {
        f"{m['kind']}/{m['metadata']['name']}": [] for m in objects}


def test_a_traefik_fleet_gateway_without_a_client_certificate_leaves_every_cluster_to_open() -> None:
    assert errors_of(TRAEFIK, (CLIENT, "")) == [
        ("unauthenticated-cluster-gateway", f"InferenceCluster {cluster}", "spec.gateway.publicInference")
        for cluster in ("gke-us-central", "eks-us-west", "onprem-us-east")]


@pytest.mark.parametrize("example", ["local", "qwen-demo", "kimi-k2"])
def test_plain_http_demos_and_fleets_without_a_gateway_are_not_refused(example: str) -> None:
    """`plainHTTP: true` is the fleet-wide, warned opt-out; a fleet without a gateway is the operator's part."""
    assert [p for p in load([ROOT / "examples" / example]).warnings if p.code == "unauthenticated-cluster-gateway"] == []


def prefix_matches(prefix: str, path: str) -> bool:
    """Gateway API PathPrefix: the path's elements start with the prefix's (a trailing `/` is ignored)."""
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def inference_routes(out: Rendered) -> list[dict]:
    return [m for ms in out.clusters.values() for m in ms if m["kind"] == "HTTPRoute"]


def reachable(out: Rendered, path: str) -> bool:
    return any(prefix_matches(match["path"]["value"], path)
               for route in inference_routes(out) for rule in route["spec"]["rules"] for match in rule["matches"])


REPLICA = "/ml-team/qwen3-8b-eks-us-west-0"


@pytest.mark.parametrize("path, open_", [
    (f"{REPLICA}/v1/chat/completions", True),
    (f"{REPLICA}/v1/models", True),
    (f"{REPLICA}/metrics", False),
    (f"{REPLICA}/tokenize", False),
    (f"{REPLICA}/health", False),
    (f"{REPLICA}/v1", True),
    (f"{REPLICA}/v10/models", False),
    ("/metrics", False),
    ("/tokenize", False),
    ("/", False),
])
def test_only_the_openai_api_is_routed_to_an_engine(path: str, open_: bool) -> None:
    assert reachable(rendered(), path) is open_


def test_every_inference_route_of_every_example_rewrites_into_v1_only() -> None:
    for example in sorted(p.name for p in (ROOT / "examples").iterdir() if p.is_dir() and p.name != "ci"):
        manifests = load([ROOT / "examples" / example])
        out = render(manifests, place(manifests.fleet, manifests.workloads))
        for route in inference_routes(out):
            for rule in route["spec"]["rules"]:
                assert all(m["path"]["value"].endswith("/v1/") for m in rule["matches"]), (example, route["metadata"])
                rewrites = [f["urlRewrite"]["path"] for f in rule.get("filters", []) if f["type"] == "URLRewrite"]
                assert all(r["replacePrefixMatch"] == "/v1/" for r in rewrites), (example, route["metadata"])


POD_OWNERS = ("Deployment", "LeaderWorkerSet", "Job")


def pod_labels(manifest: dict) -> list[dict]:
    if manifest["kind"] == "LeaderWorkerSet":
        template = manifest["spec"]["leaderWorkerTemplate"]
        return [t["metadata"]["labels"] for t in (template.get("leaderTemplate"), template["workerTemplate"]) if t]
    return [manifest["spec"]["template"]["metadata"]["labels"]]


@pytest.mark.parametrize("example", ["multi-cloud", "kimi-k2", "prefill-decode", "qwen-demo"])
def test_each_model_namespace_admits_only_the_inference_gateway_and_modelplanes_own_pods(example: str) -> None:
    manifests = load([ROOT / "examples" / example])
    out = render(manifests, place(manifests.fleet, manifests.workloads))
    for cluster, objects in out.clusters.items():
        engines = {m["metadata"]["namespace"] for m in objects if m["kind"] in ("Deployment", "LeaderWorkerSet")}
        policies = [m for m in objects if m["kind"] == "NetworkPolicy"]
        assert sorted(p["metadata"]["namespace"] for p in policies) == sorted(engines), cluster
        for policy in policies:
            assert policy["spec"] == {
                "podSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "modelplane"}},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
                     "podSelector": {"matchLabels": {"gateway.envoyproxy.io/owning-gateway-name": "inference",
                                                     "gateway.envoyproxy.io/owning-gateway-namespace":
                                                         "modelplane-system"}}},
                    {"podSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "modelplane"}}}]}]}
        for owner in (m for m in objects if m["kind"] in POD_OWNERS):
            assert all(labels.get("app.kubernetes.io/managed-by") == "modelplane" for labels in pod_labels(owner)), \
                f"{owner['kind']} {owner['metadata']['name']}'s pods are not covered by the policy"


def backend_api(out: Rendered) -> dict[str, bool]:
    return {cluster: next(a for a in addons if a.name == "envoy-gateway").values["config"]["envoyGateway"][
        "extensionApis"]["enableBackend"] for cluster, addons in out.addons.items()}


@pytest.mark.parametrize("edits", [(), (TRAEFIK,)], ids=["EnvoyGateway", "Traefik with the hop"])
def test_the_backend_api_is_on_only_where_the_fleet_gateway_reaches_backends(edits: tuple) -> None:
    assert backend_api(rendered(*edits)) == {"eks-us-west": False, "gke-us-central": True, "onprem-us-east": False}


def test_a_control_cluster_that_hosts_a_traefik_gateway_with_the_hop_runs_envoy_gateway_for_it() -> None:
    manifests = load_sources(sources(TRAEFIK, ("  cluster: gke-us-central\n", "")), control_cluster=True)
    out = render(manifests, place(manifests.fleet, manifests.workloads))
    assert [a.name for a in out.addons[CONTROL_CLUSTER] if a.name in ("envoy-gateway", "traefik")] == [
        "envoy-gateway", "traefik"]
    assert backend_api(out)[CONTROL_CLUSTER] is True


@pytest.mark.parametrize("example", ["kimi-k2", "getting-started/1-platform"])
def test_the_backend_api_is_off_without_an_envoy_gateway_fleet_gateway(example: str) -> None:
    """kimi-k2 has no InferenceGateway; getting-started's runs on Traefik (Services, no Backends)."""
    manifests = load([ROOT / "examples" / example])
    assert set(backend_api(render(manifests, place(manifests.fleet, manifests.workloads))).values()) == {False}


def test_without_an_inference_gateway_each_cluster_gateway_requires_its_api_keys() -> None:
    """examples/qwen3-8b has no InferenceGateway: callers reach the cluster's gateway directly, so it carries
    Envoy Gateway's SecurityPolicy apiKeyAuth (v1.7 api_key_auth_types.go: credentialRefs, extractFrom,
    forwardClientIDHeader, sanitize) naming the cluster's Secret, and the object is valid against that CRD."""
    manifests = load([ROOT / "examples" / "qwen3-8b"])
    out = render(manifests, place(manifests.fleet, manifests.workloads))
    policy = find(inference_objects(out, "starter"), "SecurityPolicy", "inference")
    assert policy["metadata"]["namespace"] == "modelplane-system"
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference"}],
        "apiKeyAuth": {"credentialRefs": [{"group": "", "kind": "Secret", "name": "inference-api-keys"}],
                       "extractFrom": [{"headers": ["Authorization"]}], "forwardClientIDHeader": "x-client-id",
                       "sanitize": True}}
    assert problems(policy) == []
    assert [w.code for w in out.warnings] == [], "authenticated: nothing to warn about"


def test_a_cluster_behind_the_mutual_tls_hop_carries_no_api_key_policy() -> None:
    for cluster in CLUSTERS:
        assert [o for o in inference_objects(rendered(), cluster) if o["kind"] == "SecurityPolicy"] == [], cluster
