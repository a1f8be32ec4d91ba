"""The real program (`__main__.py`) with the dev stack's config (`stacks/Pulumi.dev.yaml`), under mocks.

`up` runs it as `pulumi up` would (the dynamic provider checked and created, clouds returning
computed outputs); `preview` as the first `pulumi preview` of a new stack, when no cluster exists
yet and every kubeconfig and gateway address is unknown. Expected values come from the demo
manifests (examples/multi-cloud), compose's pins (`Settings()`) and the placement the CLI
plans for the same manifests.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from modelplane.api import load
from modelplane.compose import Settings
from modelplane.pulumi import PlacementUnknownError
from modelplane.report.text import replica_text
from modelplane.scheduling import place
from tests.builders import UNPLACEABLE
from tests.pulumi.harness import (
    HF_TOKEN,
    ROOT,
    SECRET_VALUES,
    CheckFailed,
    Engine,
    Run,
    dev_config,
    is_secret,
    run_program,
    unwrap,
)

PINS = Settings()

DEMO = ROOT / "examples" / "multi-cloud"
CLUSTERS = ("eks-us-west", "gke-us-central", "onprem-us-east")
PLACEMENT = "pulumi-python:dynamic/modelplane:Placement"
WORKLOADS = {  # (kind, name on the cluster, cluster) of every engine of every placed replica
    ("LeaderWorkerSet", "kimi-k2-instruct-onprem-us-east-0-kimi-k2", "onprem-us-east"),
    ("LeaderWorkerSet", "qwen3-coder-onprem-us-east-0-qwen3-coder", "onprem-us-east"),
    ("Deployment", "qwen-demo-gke-us-central-0-qwen", "gke-us-central"),
    ("Deployment", "qwen3-8b-gke-us-central-0-qwen3-8b", "gke-us-central"),
    ("Deployment", "qwen3-8b-eks-us-west-0-qwen3-8b", "eks-us-west"),
    ("Deployment", "llama-70b-pd-eks-us-west-0-prefill", "eks-us-west"),
    ("Deployment", "llama-70b-pd-eks-us-west-0-decode", "eks-us-west"),
    ("Deployment", "llama-70b-pd-eks-us-west-0-epp", "eks-us-west"),
}
REPLICA_ROUTES = {  # (HTTPRoute name, cluster) of every placed replica
    ("kimi-k2-instruct-onprem-us-east-0", "onprem-us-east"), ("qwen3-coder-onprem-us-east-0", "onprem-us-east"),
    ("qwen-demo-gke-us-central-0", "gke-us-central"), ("qwen3-8b-gke-us-central-0", "gke-us-central"),
    ("qwen3-8b-eks-us-west-0", "eks-us-west"), ("llama-70b-pd-eks-us-west-0", "eks-us-west")}


@pytest.fixture(scope="module")
def up() -> Run:
    return run_program(Engine())


@pytest.fixture(scope="module")
def preview() -> Run:
    return run_program(Engine(preview=True, unknown_outputs=True))


def expected_summary() -> dict[str, Any]:
    manifests = load([DEMO])
    placement = place(manifests.fleet, manifests.workloads)
    return {key: {"scheduled": f"{s.scheduled}/{s.desired}", "replicas": [replica_text(r) for r in placement.replicas_of(key)]}
            for key, s in placement.deployments.items()}


def workloads(run: Run) -> set[tuple[str, str, str]]:
    found = set()
    for r in run.engine.registered:
        kind = r.typ.rsplit(":", 1)[-1]
        if kind in ("Deployment", "LeaderWorkerSet"):
            cluster = r.name.split(":")[1]
            assert r.provider_name.startswith(f"modelplane:{cluster}-") and r.provider_name.endswith("-k8s"), r
            found.add((kind, r.inputs["metadata"]["name"], cluster))
    return found


def test_gke_cluster_network_and_l4_pool(up: Run) -> None:
    engine = up.engine
    cluster = engine.named("modelplane:gke-us-central-gke-cluster").inputs
    assert (cluster["name"], cluster["location"], cluster["project"], cluster["minMasterVersion"]) == (
        "gke-us-central", "us-central1", "modelplane-dev", "1.34")
    assert cluster["removeDefaultNodePool"] is True
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "modelplane-dev.svc.id.goog"}
    assert cluster["addonsConfig"]["gcpFilestoreCsiDriverConfig"] == {"enabled": True}
    assert engine.named("modelplane:gke-us-central-gke-subnet").inputs["network"] == "modelplane:gke-us-central-gke-network-id"
    pool = engine.named("modelplane:gke-us-central-gke:l4").inputs
    assert pool["name"] == "l4" and pool["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    node = pool["nodeConfig"]
    assert node["machineType"] == "g2-standard-8"
    assert node["guestAccelerators"] == [{"type": "nvidia-l4", "count": 1,
                                          "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}]
    assert node["labels"] == {"modelplane.ai/pool": "l4", "modelplane.ai/gpu": "nvidia-l4",
                              "nvidia.com/gpu.present": "true", "gke-no-default-nvidia-gpu-device-plugin": "true",
                              "cloud.google.com/gke-nvidia-gpu-dra-driver": "true"}
    assert engine.named("modelplane:gke-us-central-gke-system").inputs["nodeConfig"]["machineType"] == "e2-standard-4"
    rwx = engine.named("modelplane:gke-us-central-gke-rwx").inputs
    assert (rwx["metadata"]["name"], rwx["provisioner"], rwx["parameters"]) == (
        "modelplane-rwx", "filestore.csi.storage.gke.io",
        {"tier": "standard", "network": "modelplane:gke-us-central-gke-network-a1b2c3"})
    assert engine.named("modelplane:gke-us-central-gke-nvidia-driver").inputs["file"].endswith("cos/daemonset-preloaded.yaml")


def test_eks_cluster_and_gpu_node_groups(up: Run) -> None:
    engine = up.engine
    assert engine.named("modelplane:eks-us-west-eks-aws").inputs["region"] == "us-west-2"
    cluster = engine.named("modelplane:eks-us-west-eks-cluster")
    assert (cluster.inputs["name"], cluster.inputs["version"], cluster.provider_name) == (
        "eks-us-west", "1.34", "modelplane:eks-us-west-eks-aws")
    assert cluster.inputs["accessConfig"] == {"authenticationMode": "API",
                                              "bootstrapClusterCreatorAdminPermissions": True}
    # desiredSize: the nodes the placement holds there (README demo: a100 1/2, h100 1/2: the decode and the
    # prefill engine take 4 of 8 GPUs each, qwen3-8b shares the H100 node), floor 0, ceiling 2
    for pool, instance, zone, held in (("a100", "p4de.24xlarge", "us-west-2b", 1), ("h100", "p5.48xlarge", "us-west-2a", 1)):
        group = engine.named(f"modelplane:eks-us-west-eks:{pool}").inputs
        assert (group["nodeGroupName"], group["amiType"], group["instanceTypes"], group["diskSize"]) == (
            pool, "AL2023_x86_64_NVIDIA", [instance], 500)
        assert group["labels"] == {"modelplane.ai/pool": pool, "modelplane.ai/gpu": f"nvidia-{pool}",
                                   "nvidia.com/gpu.present": "true"}
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
        assert group["scalingConfig"] == {"desiredSize": held, "minSize": 0, "maxSize": 2}
        assert group["subnetIds"] == [f"modelplane:eks-us-west-eks-private-{zone}-id"]
    assert engine.named("modelplane:eks-us-west-eks-efs-csi").inputs["addonName"] == "aws-efs-csi-driver"
    rwx = engine.named("modelplane:eks-us-west-eks-rwx").inputs
    assert (rwx["metadata"]["name"], rwx["provisioner"], rwx["parameters"]["fileSystemId"]) == (
        PINS.eks_rwx_storage_class, "efs.csi.aws.com", "modelplane:eks-us-west-eks-efs-id")


def test_every_cluster_gets_the_pinned_serving_stack_on_its_provider(up: Run) -> None:
    releases = up.engine.of_type("kubernetes:helm.sh/v3:Release")
    pins = {"envoy-gateway": PINS.envoy_gateway_version,
            "envoy-ai-gateway-crds": PINS.ai_gateway_version,
            "envoy-ai-gateway": PINS.ai_gateway_version, "lws": PINS.lws_version,
            "node-feature-discovery": PINS.nfd_version,
            "nvidia-dra-driver-gpu": PINS.dra_driver_version}
    for cluster in CLUSTERS:
        mine = {r.inputs["name"]: r for r in releases if r.name.startswith(f"modelplane:{cluster}:serving-")}
        assert {name: r.inputs["version"] for name, r in mine.items()} == pins
        assert all(r.provider_name.startswith(f"modelplane:{cluster}-") for r in mine.values())
        assert mine["lws"].inputs["chart"] == "oci://registry.k8s.io/lws/charts/lws"
        assert mine["nvidia-dra-driver-gpu"].inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
        crds = up.engine.named(f"modelplane:{cluster}:serving-gateway-api-inference-extension-crds")
        assert crds.inputs["file"].endswith(f"/{PINS.inference_extension_version}/manifests.yaml")
    dra = {r.name: r.inputs["values"]["nvidiaDriverRoot"] for r in releases
           if r.inputs["name"] == "nvidia-dra-driver-gpu"}
    assert dra["modelplane:gke-us-central:serving-nvidia-dra-driver-gpu"] == "/home/kubernetes/bin/nvidia"
    assert dra["modelplane:eks-us-west:serving-nvidia-dra-driver-gpu"] == "/"


@pytest.mark.parametrize("mode", ["up", "preview"])
def test_every_placed_replica_runs_on_its_cluster(mode: str, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(mode)
    assert workloads(run) == WORKLOADS
    routes = {(r.inputs["metadata"]["name"], r.name.split(":")[1])
              for r in run.engine.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")}
    assert REPLICA_ROUTES <= routes
    for cluster in CLUSTERS:  # every workload waits for its cluster's serving stack
        assert any(urn.endswith(f"modelplane:index:ServingStack::modelplane:{cluster}:serving") for urn in run.urns)


def test_fleet_routes_go_to_the_gateway_cluster_with_real_addresses(up: Run) -> None:
    urn = up.urn("modelplane:gke-us-central:HTTPRoute:ml-team/qwen3")
    assert "modelplane:index:InferenceGateway$kubernetes:gateway.networking.k8s.io/v1:HTTPRoute" in urn
    route = up.engine.named("modelplane:gke-us-central:HTTPRoute:ml-team/qwen3")
    assert route.provider_name == "modelplane:gke-us-central-gke-k8s"
    rule = route.inputs["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml-team/qwen3/"}}]
    backends = {r.inputs["metadata"]["name"]: r.inputs["spec"]["endpoints"][0]
                for r in up.engine.of_type("kubernetes:gateway.envoyproxy.io/v1alpha1:Backend")}
    # examples/multi-cloud reaches its clusters over (mutual) TLS: their gateways listen on 443
    assert backends["gateway-gke-us-central"] == {"ip": {"address": "34.120.0.1", "port": 443}}
    assert backends["gateway-eks-us-west"] == {"fqdn": {"hostname": "a1.elb.us-west-2.amazonaws.com", "port": 443}}
    everything = json.dumps([unwrap(r.inputs) for r in up.engine.registered], default=str)
    assert "gateway-address.modelplane.invalid" not in everything and "modelplane-secret:" not in everything


def test_stack_outputs(up: Run) -> None:
    assert up.outputs["placement"] == expected_summary()
    assert up.outputs["serviceUrls"] == {"ml-team/qwen": "https://models.example.com/ml-team/qwen/",
                                         "ml-team/qwen3": "https://models.example.com/ml-team/qwen3/"}, \
        "the secured gateway of examples/multi-cloud answers on its hostname, over HTTPS"
    assert up.outputs["gatewayAddresses"] == {"eks-us-west": "a1.elb.us-west-2.amazonaws.com",
                                              "gke-us-central": "34.120.0.1", "onprem-us-east": "10.40.0.5"}
    assert up.outputs["fleetCostPerHour"] == expected_fleet_cost()
    assert up.outputs["deploymentCostPerHour"]["ml-team/qwen3-8b"] == {
        "perHour": {"USD": "13.14360"}, "unpricedNodes": 0}, "1 of 8 GPUs of an H100 node (98.32 / 8) and an L4 node"


def test_per_deployment_outputs_are_registered_once_at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # An entry per deployment (where its replicas run, what it costs): the root exports them; the
    # `Modelplane` component registering them too doubled the values every run converts and diffs.
    registered: dict[str, set[str]] = {}
    keep = pulumi.ComponentResource.register_outputs

    def record(self: pulumi.ComponentResource, outputs: Any) -> None:
        registered.setdefault(self.pulumi_resource_type, set()).update(outputs)
        keep(self, outputs)

    monkeypatch.setattr(pulumi.ComponentResource, "register_outputs", record)
    run = run_program(Engine())
    assert registered["modelplane:index:Modelplane"] == {"serviceUrls", "gatewayAddress", "gatewayAddresses",
                                                         "fleetCostPerHour"}
    assert run.outputs["placement"] == expected_summary()
    assert set(run.outputs["deploymentCostPerHour"]) == set(expected_summary())


def expected_fleet_cost() -> dict[str, object]:
    """EKS: 1 p4de node x 40.9664 + 1 p5 node x 98.32; GKE: 2 L4 nodes x 0.8536; the on-prem H200
    pool's 4 nodes have no price."""
    return {"perHour": {"USD": "140.9936"}, "unpricedNodes": 4}


def test_preview_of_a_new_stack_shows_the_placement_with_unknown_clusters(preview: Run) -> None:
    assert preview.engine.calls == ["check"], "a preview checks the placement and creates nothing"
    assert preview.outputs["placement"] == expected_summary()
    assert preview.outputs["fleetCostPerHour"] == expected_fleet_cost(), "the cost is known at preview too"
    providers = {r.name: r.inputs for r in preview.engine.of_type("pulumi:providers:kubernetes")}
    assert {name: inputs["clusterIdentifier"] for name, inputs in providers.items()} == {
        "modelplane:eks-us-west-eks-k8s": "modelplane-eks-us-west", "modelplane:gke-us-central-gke-k8s": "modelplane-gke-us-central",
        "modelplane:onprem-us-east-existing-k8s": "modelplane-onprem-us-east"}
    assert type(unwrap(providers["modelplane:gke-us-central-gke-k8s"]["kubeconfig"])).__name__ == "Unknown"


def test_an_unknown_placement_fails_instead_of_previewing_deletions() -> None:
    engine = Engine(preview=True, drop_placement=True)
    with pytest.raises(PlacementUnknownError, match="registering nothing would preview deleting every workload"):
        run_program(engine)
    assert not [r for r in engine.registered if r.typ.endswith((":Deployment", ":LeaderWorkerSet"))]


def test_secrets_stay_secret_and_out_of_the_placement(up: Run) -> None:
    for provider in up.engine.of_type("pulumi:providers:kubernetes"):
        assert is_secret(provider.inputs["kubeconfig"]), provider.name
    secret = up.engine.named("modelplane:onprem-us-east:Secret:ml-team/hf-token").inputs
    assert is_secret(secret["stringData"]) and unwrap(secret["stringData"]) == {"HF_TOKEN": HF_TOKEN}
    placement = up.engine.of_type(PLACEMENT)[0]
    carried = json.dumps([unwrap(placement.inputs), up.engine.state], default=str)
    logged = "\n".join(up.logs)
    for value in SECRET_VALUES:
        assert value not in carried and value not in logged
    assert "onpremKubeconfig" in carried, "the manifests name the config key, never the value"


def test_an_existing_cluster_needs_its_kubeconfig_in_config() -> None:
    with pytest.raises(Exception, match="modelplane:onpremKubeconfig"):
        run_program(Engine(preview=True), dev_config(**{"modelplane:onpremKubeconfig": None}))


def test_a_secret_without_config_is_not_managed_and_says_which_key_to_set() -> None:
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:secrets": None}))
    assert not run.engine.of_type("kubernetes:core/v1:Secret")
    assert any("modelplane:secrets.ml-team.hf-token.HF_TOKEN" in line for line in run.logs)


def test_serving_stack_pins_come_from_stack_config() -> None:
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:lwsVersion": "0.8.0"}))
    assert {r.inputs["version"] for r in run.engine.of_type("kubernetes:helm.sh/v3:Release")
            if r.inputs["name"] == "lws"} == {"0.8.0"}


def manifests_dir(directory: Path, extra: str = "", replace: tuple[str, str] = ("", ""),
                  drop_cluster: str = "") -> str:
    """A copy of the demo manifests, edited: an extra file, a text replacement, a cluster left out."""
    directory.mkdir(parents=True, exist_ok=True)
    for file in DEMO.glob("*.yaml"):
        text = file.read_text()
        if replace[0]:
            text = text.replace(*replace)
        if drop_cluster:
            text = "\n---\n".join(d for d in text.split("\n---\n") if f"  name: {drop_cluster}\n" not in d)
        (directory / file.name).write_text(text)
    if extra:
        (directory / "extra.yaml").write_text(extra)
    return str(directory)




def test_an_unschedulable_deployment_warns_with_the_explanation_and_the_rest_converges(tmp_path: Path) -> None:
    run = run_program(Engine(preview=True), dev_config(**{"modelplane:manifests": [manifests_dir(tmp_path, UNPLACEABLE)]}))
    warning = next(line for line in run.logs if line.startswith("ml-team/huge: 0/1 replicas scheduled"))
    assert "0/3 clusters can host another replica of ml-team/huge" in warning
    assert workloads(run) == WORKLOADS


def test_strict_mode_makes_an_unschedulable_deployment_an_error(tmp_path: Path) -> None:
    config = dev_config(**{"modelplane:manifests": [manifests_dir(tmp_path, UNPLACEABLE)], "modelplane:strict": True})
    with pytest.raises(CheckFailed, match=r"strict mode: ml-team/huge is short \(0/1 replicas scheduled\)"):
        run_program(Engine(preview=True), config)


def test_invalid_manifests_end_the_run_with_every_problem(tmp_path: Path) -> None:
    broken = manifests_dir(tmp_path, replace=("replicas: 2", "replicas: -1"))
    with pytest.raises(Exception, match=r"1 error\(s\) in the manifests:\n.*qwen.yaml:\d+: "
                                        r"ModelDeployment ml-team/qwen3-8b: spec.replicas"):
        run_program(Engine(preview=True), dev_config(**{"modelplane:manifests": [broken]}))


def test_runs_are_sticky_through_the_program(tmp_path: Path) -> None:
    """Scale up: existing replicas stay. Drop a cluster: its replicas move, which the program shows
    as resources under the new cluster's name while the old cluster's are no longer registered."""
    engine = Engine()
    before = run_program(engine).outputs["placement"]
    after_first_run = copy.deepcopy(engine.state)

    scaled = Engine(state=copy.deepcopy(after_first_run))
    after = run_program(scaled, dev_config(**{"modelplane:manifests": [
        manifests_dir(tmp_path / "scaled", replace=("replicas: 2", "replicas: 3"))]})).outputs["placement"]
    assert scaled.calls == ["check", "diff", "update"]
    assert set(before["ml-team/qwen3-8b"]["replicas"]) < set(after["ml-team/qwen3-8b"]["replicas"])
    assert {k: v for k, v in after.items() if k != "ml-team/qwen3-8b"} == {
        k: v for k, v in before.items() if k != "ml-team/qwen3-8b"}

    dropped = Engine(state=copy.deepcopy(after_first_run))
    moved = run_program(dropped, dev_config(**{"modelplane:manifests": [
        manifests_dir(tmp_path / "no-eks", drop_cluster="eks-us-west")]})).outputs["placement"]
    assert moved["ml-team/qwen3-8b"]["replicas"] == ["gke-us-central#0 (qwen3-8b: l4)",
                                                     "gke-us-central#1 (qwen3-8b: l4)"]
    assert moved["ml-team/llama-70b-pd"] == {"scheduled": "0/1", "replicas": []}
    names = {r.name for r in dropped.registered}
    assert not any(name.startswith("modelplane:eks-us-west") for name in names)
    assert "modelplane:gke-us-central:Deployment:ml-team/qwen3-8b-gke-us-central-1-qwen3-8b" in names
