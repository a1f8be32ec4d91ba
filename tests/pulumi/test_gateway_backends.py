"""The real program (`__main__.py`) with the demo fleet's gateway on Traefik and MetalLB, under mocks.

The demo manifests (examples/multi-cloud) are copied with the InferenceGateway in upstream's form
(`backend: Traefik`, `traefik.loadBalancer: MetalLB`, plain HTTP: the example's secured spec has a
client certificate and API keys, which Traefik cannot carry) on gke-us-central and the hosted provider
rooted at `/openai/`. Expected values come from compose's Traefik contract (compose/gateways) and
the addresses the mock engine gives each Gateway (tests/pulumi/harness.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from modelplane.compose import Settings
from modelplane.compose.gateways import traefik
from tests.pulumi.harness import ROOT, Engine, Run, dev_config, run_program, unwrap

DEMO = ROOT / "examples" / "multi-cloud"
ENVOY_GATEWAY = "spec:\n  cluster: gke-us-central\n  # The secured configuration"
TRAEFIK_GATEWAY = """spec:
  cluster: gke-us-central
  plainHTTP: true
  backend: Traefik
  traefik:
    version: "40.2.0"
    loadBalancer: MetalLB
    metallb: {addressPool: 10.40.255.200-10.40.255.250}
"""
HOSTED = "url: https://api.inference-provider.example.com/\n  rewritePath: /\n"
HOSTED_OPENAI = "url: https://api.inference-provider.example.com/openai/\n  rewritePath: /openai/\n"
RELEASE = "kubernetes:helm.sh/v3:Release"
OPEN = re.compile(r"(kind: InferenceCluster\n(?:.*\n)*?spec:\n)")
"""Each cluster's spec: on plain HTTP the clusters' gateways must say they take every caller."""


def traefik_manifests(directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    for file in DEMO.glob("*.yaml"):
        text = file.read_text().replace(HOSTED, HOSTED_OPENAI)
        if ENVOY_GATEWAY in text:  # the gateway is fleet.yaml's last document
            text = OPEN.sub(r"\1  gateway: {publicInference: true}\n", text.split(ENVOY_GATEWAY)[0] + TRAEFIK_GATEWAY)
        (directory / file.name).write_text(text)
    assert "backend: Traefik" in (directory / "fleet.yaml").read_text()
    assert "rewritePath: /openai/" in (directory / "qwen.yaml").read_text()
    return str(directory)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Run:
    manifests = traefik_manifests(tmp_path_factory.mktemp("traefik"))
    return run_program(Engine(), dev_config(**{"modelplane:manifests": [manifests]}))


def on_cluster(run: Run, typ: str, cluster: str) -> list[dict]:
    return [unwrap(r.inputs) for r in run.engine.of_type(typ) if r.provider_name.startswith(f"modelplane:{cluster}-")]


def test_the_gateway_cluster_installs_traefik_metallb_and_the_gateway_api_crds(up: Run) -> None:
    releases = {r["name"]: (r["chart"], r["version"], r.get("repositoryOpts", {}).get("repo"))
                for r in on_cluster(up, RELEASE, "gke-us-central")}
    assert releases["traefik"] == ("traefik", "40.2.0", "https://traefik.github.io/charts")
    assert releases["metallb"] == ("metallb", Settings().metallb_version, "https://metallb.github.io/metallb")
    files = {r.name.removeprefix("modelplane:gke-us-central:serving-") for r in up.engine.of_type("kubernetes:yaml/v2:ConfigFile")
             if r.name.startswith("modelplane:gke-us-central:serving-")}
    assert {f"gateway-api-{plural}" for plural in traefik.GATEWAY_API_CRDS} <= files
    pools = on_cluster(up, "kubernetes:metallb.io/v1beta1:IPAddressPool", "gke-us-central")
    assert [pool["spec"] for pool in pools] == [{"addresses": ["10.40.255.200-10.40.255.250"]}]
    classes = {c["metadata"]["name"]: c["spec"]["controllerName"]
               for c in on_cluster(up, "kubernetes:gateway.networking.k8s.io/v1:GatewayClass", "gke-us-central")}
    assert classes == {"modelplane": "gateway.envoyproxy.io/gatewayclass-controller",
                       "traefik": "traefik.io/gateway-controller"}


def test_only_the_gateway_cluster_gets_them(up: Run) -> None:
    for cluster in ("eks-us-west", "onprem-us-east"):
        assert "traefik" not in {r["name"] for r in on_cluster(up, RELEASE, cluster)}
        assert not on_cluster(up, "kubernetes:metallb.io/v1beta1:IPAddressPool", cluster)


def test_the_fleet_gateway_is_traefiks_and_its_address_is_a_stack_output(up: Run) -> None:
    gateway = up.engine.named("modelplane-gateway:gke-us-central:Gateway:modelplane-system/fleet")
    assert "modelplane:index:InferenceGateway$" in up.urn(gateway.name)
    assert unwrap(gateway.inputs)["spec"]["gatewayClassName"] == "traefik"
    assert up.outputs["gatewayAddress"] == "34.120.0.99"
    assert up.outputs["serviceUrls"]["ml-team/qwen3"] == "http://34.120.0.99/ml-team/qwen3/"


def test_each_destination_is_bound_to_its_real_address_and_keeps_its_own_path(up: Run) -> None:
    slices = {s["metadata"]["name"]: (s["addressType"], s["endpoints"][0]["addresses"])
              for s in on_cluster(up, "kubernetes:discovery.k8s.io/v1:EndpointSlice", "gke-us-central")}
    assert slices == {
        "qwen-gateway-gke-us-central": ("IPv4", ["34.120.0.1"]),
        "qwen3-external-qwen3-8b-hosted": ("FQDN", ["api.inference-provider.example.com"]),
        "qwen3-gateway-eks-us-west": ("FQDN", ["a1.elb.us-west-2.amazonaws.com"]),
        "qwen3-gateway-gke-us-central": ("IPv4", ["34.120.0.1"])}
    route = unwrap(up.engine.named("modelplane:gke-us-central:HTTPRoute:ml-team/qwen3").inputs)
    paths = {ref["name"]: ref["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"]
             for ref in route["spec"]["rules"][0]["backendRefs"]}
    assert paths == {"qwen3-external-qwen3-8b-hosted": "/openai/", "qwen3-gateway-eks-us-west": "/",
                     "qwen3-gateway-gke-us-central": "/"}
    assert not any("cannot rewrite the path per backend" in line for line in up.logs)
    everything = json.dumps([unwrap(r.inputs) for r in up.engine.registered], default=str)
    assert "gateway-address.modelplane.invalid" not in everything


def test_on_envoy_gateway_the_same_fleet_warns_about_the_path(tmp_path: Path) -> None:
    directory = Path(traefik_manifests(tmp_path / "envoy"))
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace(TRAEFIK_GATEWAY, "spec:\n  cluster: gke-us-central\n  plainHTTP: true\n"))
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:manifests": [str(directory)]}))
    assert any("qwen3-8b-hosted (/openai/)" in line and "Envoy Gateway cannot rewrite the path per backend" in line
               for line in run.logs)
