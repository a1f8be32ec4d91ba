"""The components as a platform team imports them into its own Pulumi code, and their building blocks."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi import ResourceOptions

from modelplane.api import load
from modelplane.compose import address_placeholder
from modelplane.invariants import InvariantError
from modelplane.pulumi.kube import kubernetes_object, substitute
from modelplane.pulumi.clusters.kubeconfig import eks_kubeconfig, gke_kubeconfig
from modelplane.pulumi.names import legacy_manifest_name, manifest_name, provider_identifier, scope
from tests.pulumi.harness import ROOT, Engine, is_secret, unwrap


def run(program: Any, engine: Engine) -> dict[str, Any]:
    """Run `program` (which returns {name: Output}) under `engine`'s mocks; the resolved values."""
    from pulumi.runtime import settings

    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="platform", stack="test", preview=engine.preview)
    resolved: dict[str, Any] = {}

    @pulumi.runtime.test
    def main() -> pulumi.Output[Any]:
        outputs = program()
        return pulumi.Output.all(**outputs).apply(resolved.update)

    main()
    return resolved


async def secret(output: pulumi.Output[Any]) -> bool:
    return await output.is_secret()


def test_a_platform_program_builds_its_own_gke_cluster_and_runs_things_on_it() -> None:
    engine = Engine()

    def program() -> dict[str, Any]:
        from modelplane.pulumi.clusters.gke import GkeCluster

        cluster = GkeCluster("research", {
            "name": "research", "project": "acme-ml", "region": "europe-west4", "kubernetes_version": "1.34",
            "driver_installer": None, "pools": [{
                "name": "h100", "machine_type": "a3-highgpu-8g", "accelerator_type": "nvidia-h100-80gb",
                "accelerator_count": 8, "disk_size_gb": 200, "node_count": 0, "min_node_count": 0,
                "max_node_count": 2, "zones": ["europe-west4-c"]}]})
        k8s.core.v1.Namespace("research-team", metadata={"name": "research"},
                              opts=ResourceOptions(provider=cluster.provider))
        return {"kubeconfig": cluster.kubeconfig, "secret": asyncio.ensure_future(secret(cluster.kubeconfig)),
                "storage": cluster.storage_class_name}

    got = run(program, engine)
    assert got["secret"] is True and got["storage"] == "modelplane-rwx"
    user = json.loads(got["kubeconfig"])["users"][0]["user"]["exec"]
    assert user["command"] == "gke-gcloud-auth-plugin"
    assert engine.named("research-team").provider_name == "research-k8s"
    pool = engine.named("research:h100").inputs["nodeConfig"]
    assert pool["guestAccelerators"][0]["type"] == "nvidia-h100-80gb" and pool["labels"]["modelplane.ai/pool"] == "h100"
    assert not engine.of_type("kubernetes:yaml/v2:ConfigFile"), "driver_installer=None installs no driver"


def test_a_platform_program_adds_the_whole_fleet_next_to_its_own_resources() -> None:
    engine = Engine()

    def program() -> dict[str, Any]:
        from modelplane.pulumi import InferenceCluster, Modelplane

        manifests = load([ROOT / "examples" / "multi-cloud"])
        fleet = Modelplane("ml", {"manifests": manifests, "gcp_project": "acme-ml",
                                  "kubeconfigs": {"onprem-us-east": pulumi.Output.secret("kubeconfig: onprem")}})
        k8s.core.v1.ConfigMap("ops-notes", metadata={"name": "ops", "namespace": "default"}, data={"owner": "platform"},
                              opts=ResourceOptions(provider=fleet.clusters["gke-us-central"].provider))
        lab = manifests.fleet.cluster("onprem-us-east")
        assert lab is not None
        extra = InferenceCluster("lab-copy", {"cluster": lab, "fleet": manifests.fleet,
                                              "kubeconfig": "kubeconfig: lab"})
        return {"urls": fleet.service_urls, "summary": fleet.placement_summary,
                "lab": asyncio.ensure_future(secret(extra.kubeconfig))}

    got = run(program, engine)
    assert sorted(got["urls"]) == ["ml-team/qwen", "ml-team/qwen3"]
    assert got["summary"]["ml-team/qwen3-8b"]["scheduled"] == "2/2"
    assert got["lab"] is True
    assert engine.named("ops-notes").provider_name == "ml:gke-us-central-gke-k8s"


def test_an_existing_cluster_without_a_kubeconfig_is_refused() -> None:
    def program() -> dict[str, Any]:
        from modelplane.pulumi import InferenceCluster

        manifests = load([ROOT / "examples" / "multi-cloud"])
        lab = manifests.fleet.cluster("onprem-us-east")
        assert lab is not None
        InferenceCluster("lab", {"cluster": lab, "fleet": manifests.fleet})
        return {}

    with pytest.raises(ValueError, match="needs its kubeconfig .secret config key 'onpremKubeconfig'"):
        run(program, Engine(preview=True))


def test_an_eks_cluster_needs_two_zones() -> None:
    def program() -> dict[str, Any]:
        from modelplane.pulumi.clusters.eks import EksCluster

        EksCluster("one-zone", {"name": "one-zone", "region": "us-east-1", "kubernetes_version": "1.34", "pools": [{
            "name": "gpu", "machine_type": "p5.48xlarge", "accelerator_type": "nvidia-h100", "accelerator_count": 8,
            "disk_size_gb": 500, "node_count": 1, "min_node_count": 1, "max_node_count": 1, "zones": ["us-east-1a"]}]})
        return {}

    class OneZoneRegion(Engine):
        def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
            if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
                return {"names": ["us-east-1a"]}
            return super().call(args)

    with pytest.raises(ValueError, match="at least two availability zones"):
        run(program, OneZoneRegion(preview=True))


def test_kubeconfigs_use_each_clouds_exec_credential_plugin() -> None:
    gke = json.loads(gke_kubeconfig("research", "34.1.2.3", "Q0E="))
    assert gke["clusters"][0]["cluster"] == {"server": "https://34.1.2.3", "certificate-authority-data": "Q0E="}
    assert gke["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert gke["users"][0]["user"]["exec"]["provideClusterInfo"] is True
    eks = json.loads(eks_kubeconfig("eks-us-west", "us-west-2", "https://x.eks.amazonaws.com", "Q0E="))
    assert eks["users"][0]["user"]["exec"]["command"] == "aws"
    assert eks["users"][0]["user"]["exec"]["args"] == ["--region", "us-west-2", "eks", "get-token",
                                                       "--cluster-name", "eks-us-west", "--output", "json"]
    assert eks["current-context"] == "eks-us-west"


def test_names_carry_the_component_cluster_kind_namespace_and_name() -> None:
    assert manifest_name(scope("fleet", "gke-a"), {"kind": "Namespace", "metadata": {"name": "ml"}}) == (
        "fleet:gke-a:Namespace:ml")
    assert manifest_name(scope("fleet", "gke-a"), {"kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "ml"}}) == (
        "fleet:gke-a:HTTPRoute:ml/r")


def test_names_that_joined_with_dashes_collide_no_longer_do() -> None:
    """`ml-team/x` and `ml/team-x` had one name (`c-deployment-ml-team-x`), and two Modelplane
    components with a cluster of the same name shared theirs. The encoding keeps them apart."""
    def deployment(namespace: str, name: str) -> dict[str, Any]:
        return {"kind": "Deployment", "metadata": {"name": name, "namespace": namespace}}

    assert legacy_manifest_name("c", deployment("ml-team", "x")) == legacy_manifest_name("c", deployment("ml", "team-x"))
    assert manifest_name(scope("m", "c"), deployment("ml-team", "x")) == "m:c:Deployment:ml-team/x"
    assert manifest_name(scope("m", "c"), deployment("ml", "team-x")) == "m:c:Deployment:ml/team-x"
    assert manifest_name(scope("staging", "c"), deployment("ml", "x")) != manifest_name(scope("prod", "c"),
                                                                                         deployment("ml", "x"))
    assert legacy_manifest_name("gke-a", deployment("ml", "x")) == "gke-a-deployment-ml-x"


def test_a_built_in_kind_without_a_typed_class_is_a_programming_error() -> None:
    with pytest.raises(InvariantError, match="apps/v1 StatefulSet is missing from TYPED"):
        kubernetes_object("x", {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"}},
                          ResourceOptions())


def test_placeholders_are_replaced_whole_or_inside_a_string() -> None:
    engine = Engine()
    placeholder = address_placeholder("eks-a")

    def program() -> dict[str, Any]:
        replaced = substitute({"url": f"http://{placeholder}/ml/x/", "host": placeholder, "port": 80, "other": "keep"},
                              {placeholder: pulumi.Output.secret("a1.elb.amazonaws.com")})
        k8s.core.v1.ConfigMap("probe", metadata={"name": "probe"}, data=replaced)
        return {}

    run(program, engine)
    data = engine.named("probe").inputs["data"]
    assert is_secret(data), "a secret replacement keeps the property secret"
    assert unwrap(data) == {"url": "http://a1.elb.amazonaws.com/ml/x/", "host": "a1.elb.amazonaws.com", "port": 80,
                            "other": "keep"}


@pytest.mark.parametrize("statement", [
    "import modelplane",
    "import modelplane.pulumi",
    "from modelplane.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
])
def test_the_cloud_sdks_are_imported_only_when_a_cluster_needs_them(statement: str) -> None:
    sdks = ("pulumi_gcp", "pulumi_aws", "pulumi_azure_native", "pulumi_nebius", "ediri_vultr")
    code = f"{statement}\nimport sys\nprint(sorted(m for m in {sdks!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_clusters_provider_is_registered_on_its_first_read_only() -> None:
    engine = Engine()

    def program() -> dict[str, Any]:
        from modelplane.pulumi.clusters import ExistingCluster

        idle = ExistingCluster("idle", {"name": "idle", "kubeconfig": "kubeconfig: idle"})
        lab = ExistingCluster("lab", {"name": "lab", "kubeconfig": "kubeconfig: lab"})
        assert lab.provider is lab.provider, "one provider, however often it is read"
        k8s.core.v1.Namespace("research-team", metadata={"name": "research"},
                              opts=ResourceOptions(provider=lab.provider))
        return {"idle": idle.kubeconfig}

    run(program, engine)
    providers = engine.of_type("pulumi:providers:kubernetes")
    assert [p.name for p in providers] == ["lab-k8s"], "the idle cluster's provider is never read, so never registered"
    assert providers[0].inputs["clusterIdentifier"] == provider_identifier("lab")
    assert unwrap(providers[0].inputs["kubeconfig"]) == "kubeconfig: lab" and is_secret(providers[0].inputs["kubeconfig"])
    assert engine.named("research-team").provider_name == "lab-k8s"
