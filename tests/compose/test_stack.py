"""The serving stack each cluster gets: pinned, overridable, in install order."""

from __future__ import annotations

from modelplane.api import InferenceCluster
from modelplane.compose import Install, Settings
from modelplane.compose.stack import serving_stack
from tests.builders import API, pool, cluster
from tests.compose.helpers import compose, deployment, find

GKE = InferenceCluster.model_validate({
    "apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": "gke"},
    "spec": {"cluster": {"source": "GKE", "gke": {"region": "us-central1"}}, "nodePools": [pool("l4", "h100")]}})


def by_name(addons: tuple) -> dict:
    return {addon.name: addon for addon in addons}


def test_every_cluster_gets_the_whole_stack_in_install_order() -> None:
    rendered = compose(deployment("m"))
    for addons in rendered.addons.values():
        assert [a.name for a in addons] == [
            "gateway-api-inference-extension-crds", "envoy-gateway", "envoy-ai-gateway-crds", "envoy-ai-gateway",
            "lws", "node-feature-discovery", "nvidia-dra-driver-gpu", "inference-gateway"]
        names = [a.name for a in addons]
        assert all(names.index(dep) < names.index(a.name) for a in addons for dep in a.depends_on)


def test_charts_are_pinned_and_each_pin_is_overridable() -> None:
    default = by_name(serving_stack(cluster("c"), Settings()))
    assert (default["envoy-gateway"].chart_ref, default["envoy-gateway"].version) == (
        "oci://docker.io/envoyproxy/gateway-helm", "v1.7.0")
    assert (default["lws"].chart_ref, default["lws"].version) == ("oci://registry.k8s.io/lws/charts/lws", "0.9.0")
    assert (default["nvidia-dra-driver-gpu"].chart_ref, default["nvidia-dra-driver-gpu"].repository) == (
        "nvidia-dra-driver-gpu", "https://helm.ngc.nvidia.com/nvidia")
    overridden = by_name(serving_stack(cluster("c"), Settings(lws_version="0.9.1", envoy_gateway_version="v1.8.0",
                                                              inference_extension_version="v1.0.2")))
    assert overridden["lws"].version == "0.9.1"
    assert overridden["envoy-gateway"].version == "v1.8.0"
    assert overridden["gateway-api-inference-extension-crds"].manifest_url.endswith("/download/v1.0.2/manifests.yaml")


def test_each_addon_says_how_it_is_installed() -> None:
    addons = by_name(serving_stack(cluster("c"), Settings()))
    assert addons["gateway-api-inference-extension-crds"].install is Install.MANIFEST
    assert addons["lws"].install is Install.HELM
    assert addons["inference-gateway"].install is Install.OBJECTS


def test_envoy_gateway_enables_inference_pools_and_keeps_the_backend_api_off_on_a_workload_cluster() -> None:
    config = by_name(serving_stack(cluster("c"), Settings()))["envoy-gateway"].values["config"]["envoyGateway"]
    assert config["extensionApis"]["enableBackend"] is False
    assert {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"} \
        in config["extensionManager"]["backendResources"]


def test_the_dra_driver_finds_the_nvidia_driver_where_the_cluster_installs_it() -> None:
    assert by_name(serving_stack(GKE, Settings()))["nvidia-dra-driver-gpu"].values["nvidiaDriverRoot"] == \
        "/home/kubernetes/bin/nvidia"
    assert by_name(serving_stack(cluster("c"), Settings()))["nvidia-dra-driver-gpu"].values["nvidiaDriverRoot"] == "/"


def test_the_inference_gateway_addon_holds_the_gateway_class_and_gateway() -> None:
    objects = by_name(serving_stack(cluster("c"), Settings()))["inference-gateway"].objects
    assert find(objects, "GatewayClass")["spec"] == {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}
    gateway = find(objects, "Gateway")
    assert (gateway["metadata"]["namespace"], gateway["metadata"]["name"]) == ("modelplane-system", "inference")
    assert gateway["spec"]["listeners"][0]["allowedRoutes"] == {"namespaces": {"from": "All"}}
