"""ModelEndpoint URLs never point the fleet gateway inside (issue 23): each case is a URL and the
start of the reason, from the address registries (RFC 1122 loopback, RFC 3927 link-local, RFC 1918
private, RFC 6598 shared, RFC 4193 unique-local) and the clouds' documented metadata endpoints."""

from __future__ import annotations

import pytest

from modelplane.api import ManifestErrors, load_sources

ENDPOINT = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: e, namespace: ml}
spec:
  url: URL
"""

REFUSED = [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is link-local"),
    ("http://[fe80::1]/", "fe80::1 is link-local"),
    ("http://[::ffff:169.254.169.254]/", "169.254.169.254 is link-local"),
    ("http://127.0.0.1:8080/", "127.0.0.1 is this machine"),
    ("http://[::1]/", "::1 is this machine"),
    ("http://0.0.0.0/", "0.0.0.0 is this machine"),
    ("http://localhost/", "localhost is this machine"),
    ("http://api.localhost/", "api.localhost is this machine"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata service"),
    ("http://kubernetes.default.svc/", "kubernetes.default.svc is a name of the cluster's own service domain"),
    ("https://kubernetes.default/", "kubernetes.default is a name of the cluster's own service domain"),
    ("http://vllm.ml.svc.cluster.local:8000/", "vllm.ml.svc.cluster.local is a name of the cluster's own"),
    ("http://my-service:8000/", "my-service has no domain"),
    ("http://0251.0376.0251.0376/", "0251.0376.0251.0376 is neither an IP address nor a DNS name"),
    ("http://2852039166/", "2852039166 is neither an IP address nor a DNS name"),
    ("http://0xa9fea9fe/", "0xa9fea9fe is neither"),
    ("http://10.1.2.3/", "10.1.2.3 is a private address; set allowPrivateNetwork: true"),
    ("http://172.16.0.1/", "172.16.0.1 is a private address"),
    ("http://192.168.1.10/", "192.168.1.10 is a private address"),
    ("http://100.64.0.1/", "100.64.0.1 is a private address"),
    ("http://[fd00::1]/", "fd00::1 is a private address"),
    ("http://llm.corp.internal/", "llm.corp.internal is a private DNS name"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast or reserved address"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_an_endpoint_inside_is_refused(url: str, reason: str) -> None:
    with pytest.raises(ManifestErrors) as raised:
        load_sources([("e.yaml", ENDPOINT.replace("URL", url))])
    assert [str(p) for p in raised.value.errors] == [f"e.yaml:5: ModelEndpoint ml/e: spec.url: {reason}" +
                                                      str(raised.value.errors[0]).split(reason, 1)[1]]


@pytest.mark.parametrize("url", ["http://10.1.2.3/", "http://[fd00::1]/", "http://llm.corp.internal/"])
def test_a_private_endpoint_loads_with_the_explicit_allow(url: str) -> None:
    text = ENDPOINT.replace("URL", url) + "  allowPrivateNetwork: true\n"
    assert load_sources([("e.yaml", text)]).workloads.endpoints[0].spec.allow_private_network


@pytest.mark.parametrize("url", ["http://169.254.169.254/", "http://127.0.0.1/", "http://kubernetes.default.svc/"])
def test_the_allow_never_opens_loopback_link_local_or_the_cluster(url: str) -> None:
    with pytest.raises(ManifestErrors, match="spec.url: "):
        load_sources([("e.yaml", ENDPOINT.replace("URL", url) + "  allowPrivateNetwork: true\n")])


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "https://34.120.0.1:8443/", "https://llm.example.com/"])
def test_public_endpoints_load(url: str) -> None:
    assert load_sources([("e.yaml", ENDPOINT.replace("URL", url))]).workloads.endpoints


GATEWAY = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceGateway
metadata: {name: fleet}
spec:
  cluster: c
  hostname: llm.example.com
  plainHTTP: true
status: {address: 34.120.0.99}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: c}
spec:
  gateway: {publicInference: true}
  cluster: {source: Existing, existing: {kubeconfig: cKubeconfig}}
  nodePools:
  - {name: p, className: k, nodeCount: 1}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: k}
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
"""


@pytest.mark.parametrize("url", ["https://llm.example.com/v1", "https://LLM.example.com/", "http://34.120.0.99/"])
def test_an_endpoint_at_the_fleet_gateway_itself_is_a_loop(url: str) -> None:
    assert load_sources([("g.yaml", GATEWAY)]).fleet.gateway is not None
    with pytest.raises(ManifestErrors, match=r"ModelEndpoint ml/e: spec.url: .* is the fleet gateway itself"):
        load_sources([("g.yaml", GATEWAY), ("e.yaml", ENDPOINT.replace("URL", url))])
