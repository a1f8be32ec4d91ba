"""Issue 15 under `pulumi.runtime.set_mocks`: the AKS, Nebius, Vultr, EKS Capacity Block and
existing-by-Secret clusters of examples/more-clouds register what their manifests ask for.

Expected values come from the example's manifests (examples/more-clouds/fleet.yaml) and from the
clouds' documented settings the modules' docstrings cite; the shipped mocks (modelplane.testing) answer the two
invokes (AKS admin credentials, the region's availability zones) and compute what each cloud would.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from modelplane.api import Manifests, load
from modelplane.testing import AKS_KUBECONFIG, VULTR_KUBECONFIG
from tests.pulumi.harness import ROOT, Engine, is_secret, unwrap

EXAMPLE = ROOT / "examples" / "more-clouds"
BYO_KUBECONFIG = "apiVersion: v1\nkind: Config\n# byo-us-east\n"
TAINT = {"key": "nvidia.com/gpu", "value": "true"}


def labels(pool: str, gpu: str) -> dict[str, str]:
    return {"modelplane.ai/pool": pool, "modelplane.ai/gpu": gpu, "nvidia.com/gpu.present": "true"}


CloudEngine = Engine
"""The shipped mocks answer every cloud's computed outputs and calls (modelplane.testing)."""


class RecordingMonitor(MockMonitor):
    """Also records each resource's `deletedWith` (the URN it is deleted with, or '')."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.deleted_with: dict[str, str] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        self.deleted_with[request.name] = request.deletedWith
        return super().RegisterResource(request)


def build_fleet(engine: CloudEngine, manifests: Manifests | None = None, **extra: Any) -> tuple[dict[str, Any], RecordingMonitor]:
    """The whole fleet of `manifests` (default: examples/more-clouds) under the mocks; the resolved
    kubeconfigs, whether each is secret, each cluster's RWX class and anchor, and the monitor."""
    monitor = RecordingMonitor(engine)
    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="platform", stack="test", preview=engine.preview, monitor=monitor)
    resolved: dict[str, Any] = {}

    @pulumi.runtime.test
    def main() -> pulumi.Output[Any]:
        from modelplane.pulumi import Modelplane

        fleet = Modelplane("ml", {"manifests": manifests or load([EXAMPLE]),
                                  "kubeconfigs": {"byo-us-east": pulumi.Output.secret(BYO_KUBECONFIG)},
                                  "credentials": {"azure-prod": {"subscription_id": pulumi.Output.secret("sub-0001")}},
                                  **extra})
        resolved["storage"] = {name: cluster.storage_class_name for name, cluster in fleet.clusters.items()}
        resolved["anchor"] = {name: cluster.anchor is not None for name, cluster in fleet.clusters.items()}
        # One apply per value: in a preview the unknown kubeconfigs are left out, the rest kept.
        return pulumi.Output.all(
            pulumi.Output.all(**{name: c.kubeconfig for name, c in fleet.clusters.items()}).apply(
                lambda kubeconfigs: resolved.update(kubeconfigs=kubeconfigs)),
            pulumi.Output.all(**{name: asyncio.ensure_future(c.kubeconfig.is_secret())
                                 for name, c in fleet.clusters.items()}).apply(lambda secret: resolved.update(secret=secret)),
            fleet.placement_summary.apply(lambda summary: resolved.update(summary=summary)))

    main()
    return resolved, monitor


@pytest.fixture(scope="module")
def fleet() -> tuple[CloudEngine, dict[str, Any], RecordingMonitor]:
    engine = CloudEngine()
    resolved, monitor = build_fleet(engine)
    return engine, resolved, monitor


def inputs(engine: Engine, name: str) -> dict[str, Any]:
    return unwrap(engine.named(name).inputs)


# (resource, inputs it must carry: the manifests' machine, GPUs, bounds, zones, labels and taints)
REGISTERED = [
    ("ml:aks-westeurope-aks-cluster", {
        "resourceName": "aks-westeurope", "location": "westeurope", "kubernetesVersion": "1.34",
        "identity": {"type": "SystemAssigned"}, "storageProfile": {"fileCSIDriver": {"enabled": True}}}),
    ("ml:aks-westeurope-aks:gpuh100", {
        "agentPoolName": "gpuh100", "mode": "User", "vmSize": "Standard_ND96isr_H100_v5", "osDiskSizeGB": 256,
        "count": 1, "enableAutoScaling": True, "minCount": 1, "maxCount": 2, "availabilityZones": ["1", "2"],
        "nodeLabels": labels("gpuh100", "nvidia-h100"), "nodeTaints": ["nvidia.com/gpu=true:NoSchedule"],
        "gpuProfile": {"driver": "Install"}, "resourceName": "aks-westeurope"}),
    ("ml:nebius-eu-north-nebius-cluster", {
        "name": "nebius-eu-north", "controlPlane": {"version": "1.34", "endpoints": {"publicEndpoint": {}},
                                                    "etcdClusterSize": 3, "subnetId": "ml:nebius-eu-north-nebius-subnet-id"}}),
    ("ml:nebius-eu-north-nebius:gpu-h100", {
        "name": "gpu-h100", "parentId": "ml:nebius-eu-north-nebius-cluster-id",
        "autoscaling": {"minNodeCount": 0, "maxNodeCount": 2}}),
    ("ml:nebius-eu-north-nebius-gpu-cluster-fabric-2", {"infinibandFabric": "fabric-2"}),
    ("ml:vultr-ewr-vultr-cluster", {"label": "vultr-ewr", "region": "ewr", "version": "v1.36.1+3", "haControlplanes": True}),
    ("ml:vultr-ewr-vultr:gpu-l40s", {
        "clusterId": "ml:vultr-ewr-vultr-cluster-id", "label": "gpu-l40s", "plan": "vcg-l40s-16c-180g-48vram",
        "nodeQuantity": 1, "autoScaler": True, "minNodes": 1, "maxNodes": 3, "labels": labels("gpu-l40s", "nvidia-l40s"),
        "taints": [{**TAINT, "effect": "NoSchedule"}]}),
    ("ml:eks-us-east-eks:gpu-h200", {
        "capacityType": "CAPACITY_BLOCK", "amiType": "AL2023_x86_64_NVIDIA", "nodeGroupName": "gpu-h200",
        "launchTemplate": {"id": "ml:eks-us-east-eks-gpu-h200-capacity-block-id", "version": "1"},
        "scalingConfig": {"desiredSize": 2, "minSize": 2, "maxSize": 2},
        "subnetIds": ["ml:eks-us-east-eks-private-us-east-2b-id"], "labels": labels("gpu-h200", "nvidia-h200"),
        "taints": [{**TAINT, "effect": "NO_SCHEDULE"}]}),
    ("ml:eks-us-east-eks-gpu-h200-capacity-block", {
        "instanceType": "p5en.48xlarge", "instanceMarketOptions": {"marketType": "capacity-block"},
        "capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}},
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 1024, "volumeType": "gp3",
                                                                    "deleteOnTermination": "true"}}]}),
]


@pytest.mark.parametrize(("name", "want"), REGISTERED, ids=[name for name, _ in REGISTERED])
def test_each_cloud_registers_what_the_manifests_ask_for(fleet: tuple[CloudEngine, Any, Any], name: str,
                                                         want: dict[str, Any]) -> None:
    engine, _, _ = fleet
    got = inputs(engine, name)
    assert {key: got.get(key) for key in want} == want


def test_a_nebius_gpu_group_gets_its_preset_drivers_dra_taint_labels_and_fabric(fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, _, _ = fleet
    template = inputs(engine, "ml:nebius-eu-north-nebius:gpu-h100")["template"]
    assert template["resources"] == {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"}
    assert template["bootDisk"] == {"type": "NETWORK_SSD", "sizeGibibytes": 256}
    assert template["gpuSettings"] == {"driversPreset": "cuda13.0", "dra": True}
    assert template["gpuCluster"] == {"id": "ml:nebius-eu-north-nebius-gpu-cluster-fabric-2-id"}
    assert template["metadata"] == {"labels": labels("gpu-h100", "nvidia-h100")}
    assert template["taints"] == [{**TAINT, "effect": "NO_SCHEDULE"}]
    assert template["filesystems"] == [{"attachMode": "READ_WRITE", "mountTag": "modelplane-cache",
                                        "existingFilesystem": {"id": "ml:nebius-eu-north-nebius-cache-fs-id"}}]
    assert "mount -t virtiofs modelplane-cache /mnt/data" in template["cloudInitUserData"]


def test_an_eks_capacity_block_takes_its_machine_from_the_launch_template(fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, _, _ = fleet
    group = inputs(engine, "ml:eks-us-east-eks:gpu-h200")
    assert "instanceTypes" not in group and "diskSize" not in group
    zones = sorted(r.inputs["availabilityZone"] for r in engine.of_type("aws:ec2/subnet:Subnet")
                   if r.name.startswith("ml:eks-us-east-eks-private-"))
    assert zones == ["us-east-2a", "us-east-2b"], "the pool's one zone, completed by the region's first other zone"


def test_kubeconfigs_stay_secret_and_reach_each_cluster_its_own_way(fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, resolved, _ = fleet
    assert resolved["secret"] == dict.fromkeys(resolved["kubeconfigs"], True)
    kubeconfigs = resolved["kubeconfigs"]
    assert kubeconfigs["aks-westeurope"] == AKS_KUBECONFIG
    assert kubeconfigs["vultr-ewr"] == VULTR_KUBECONFIG
    assert kubeconfigs["byo-us-east"] == BYO_KUBECONFIG
    nebius = json.loads(kubeconfigs["nebius-eu-north"])
    assert nebius["clusters"][0]["cluster"]["server"] == "https://pub.mk8s.eu-north1.nebius.cloud"
    assert base64.b64decode(nebius["clusters"][0]["cluster"]["certificate-authority-data"]).startswith(b"-----BEGIN")
    assert nebius["users"][0]["user"]["exec"]["command"] == "nebius"
    for cluster in ("ml:aks-westeurope-aks", "ml:nebius-eu-north-nebius", "ml:vultr-ewr-vultr", "ml:byo-us-east-existing"):
        assert is_secret(engine.named(f"{cluster}-k8s").inputs["kubeconfig"]), cluster


def test_each_cloud_gets_the_readwritemany_class_it_offers(fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, resolved, _ = fleet
    assert resolved["storage"] == {"aks-westeurope": "modelplane-rwx", "byo-us-east": "nfs-rwx",
                                   "eks-us-east": "efs-sc", "nebius-eu-north": "modelplane-rwx", "vultr-ewr": None}
    aks = inputs(engine, "ml:aks-westeurope-aks-rwx")
    assert (aks["provisioner"], aks["parameters"]) == ("file.csi.azure.com", {"skuName": "Premium_LRS"})
    assert "mfsymlinks" in aks["mountOptions"]
    nebius = inputs(engine, "ml:nebius-eu-north-nebius-rwx")
    assert (nebius["provisioner"], nebius["volumeBindingMode"]) == ("mounted-fs-path.csi.nebius.ai", "WaitForFirstConsumer")
    driver = inputs(engine, "ml:nebius-eu-north-nebius-csi-mounted-fs-path")
    assert driver["chart"] == "oci://cr.eu-north1.nebius.cloud/mk8s/helm/csi-mounted-fs-path"
    assert driver["values"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert not [r for r in engine.registered if r.name.startswith("vultr-ewr") and r.name.endswith("-rwx")]


def test_only_clusters_the_stack_creates_anchor_their_workloads(fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, resolved, monitor = fleet
    assert resolved["anchor"] == {"aks-westeurope": True, "byo-us-east": False, "eks-us-east": True,
                                  "nebius-eu-north": True, "vultr-ewr": True}
    by_cluster: dict[str, set[str]] = {}
    for registration in engine.registered:
        if registration.typ.startswith("kubernetes:") and registration.custom:
            cluster = registration.provider_name.removeprefix("ml:").rsplit("-", 2)[0]
            by_cluster.setdefault(cluster, set()).add(monitor.deleted_with[registration.name].rsplit("::", 1)[-1])
    assert by_cluster["byo-us-east"] == {""}, "an existing cluster's workloads are deleted one by one"
    assert by_cluster["aks-westeurope"] == {"ml:aks-westeurope-aks-cluster"}
    assert by_cluster["vultr-ewr"] == {"ml:vultr-ewr-vultr-cluster"}
    assert by_cluster["nebius-eu-north"] == {"ml:nebius-eu-north-nebius-cluster"}


def test_a_named_credentials_set_gets_an_explicit_provider_and_the_rest_stay_ambient(
        fleet: tuple[CloudEngine, Any, Any]) -> None:
    engine, _, _ = fleet
    azure = engine.named("ml:aks-westeurope-aks-azure")
    assert azure.typ == "pulumi:providers:azure-native"
    assert is_secret(azure.inputs["subscriptionId"]) and unwrap(azure.inputs["subscriptionId"]) == "sub-0001"
    assert {r.provider_name for r in engine.registered if r.name.startswith("ml:aks-westeurope-aks-") and r.custom
            and not r.typ.startswith(("kubernetes:", "pulumi:providers"))} == {"ml:aks-westeurope-aks-azure"}
    assert not engine.of_type("pulumi:providers:nebius") and not engine.of_type("pulumi:providers:vultr")
    assert engine.named("ml:vultr-ewr-vultr-cluster").provider_name == "", "the stack's default provider"
    assert engine.named("ml:nebius-eu-north-nebius-cluster").provider_name == ""


def test_an_undefined_credentials_set_is_an_error_that_names_the_config_key() -> None:
    with pytest.raises(ValueError, match=r"credentials.name 'azure-prod' names no credentials set; .*"
                                         r"'modelplane:credentials.azure-prod.<setting>'"):
        build_fleet(CloudEngine(preview=True), credentials={})


def test_a_setting_the_provider_does_not_take_is_refused() -> None:
    with pytest.raises(ValueError, match="holds a setting this provider does not take"):
        build_fleet(CloudEngine(preview=True), credentials={"azure-prod": {"api_key": "x"}})


def test_a_preview_of_clusters_that_do_not_exist_yet_registers_them_all() -> None:
    engine = CloudEngine(preview=True, unknown_outputs=True)
    resolved, _ = build_fleet(engine)
    assert resolved["summary"]["ml-team/llama-3-3-70b"]["scheduled"] == "3/3"
    assert "kubeconfigs" not in resolved, "no cluster exists yet, so no kubeconfig is known"
    assert {r.name for r in engine.of_type("pulumi:providers:kubernetes")} >= {
        "ml:aks-westeurope-aks-k8s", "ml:nebius-eu-north-nebius-k8s", "ml:vultr-ewr-vultr-k8s", "ml:eks-us-east-eks-k8s"}


SDKS = ("pulumi_gcp", "pulumi_aws", "pulumi_azure_native", "pulumi_nebius", "ediri_vultr")
FLEETS = {
    "vultr": ("vultr-ewr", "vultr-l40s-1x"),
    "aks": ("aks-westeurope", "aks-h100-8x"),
    "nebius": ("nebius-eu-north", "nebius-h100-8x"),
    "eks-and-existing": ("eks-us-east", "eks-h200-8x-p5en", "byo-us-east", "h100-8x-byo"),
}
IMPORTS = """
import sys
from tests.pulumi.test_clouds import CloudEngine, build_fleet
from modelplane.api import load
for path in sys.argv[1:]:
    build_fleet(CloudEngine(preview=True), load([path]))
    print(sorted(m for m in {sdks!r} if m in sys.modules))
"""


def test_building_a_cluster_imports_only_its_clouds_sdk(tmp_path: Path) -> None:
    """One process builds one fleet after another: each adds exactly its own cloud's SDK."""
    paths = []
    for name, documents in FLEETS.items():
        docs = [doc for doc in yaml.safe_load_all((EXAMPLE / "fleet.yaml").read_text())
                if doc["metadata"]["name"] in documents]
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
        paths.append(str(tmp_path / f"{name}.yaml"))
    out = subprocess.run([sys.executable, "-c", IMPORTS.format(sdks=SDKS), *paths], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines() == [
        "['ediri_vultr']",
        "['ediri_vultr', 'pulumi_azure_native']",
        "['ediri_vultr', 'pulumi_azure_native', 'pulumi_nebius']",
        "['ediri_vultr', 'pulumi_aws', 'pulumi_azure_native', 'pulumi_nebius']",
    ]
