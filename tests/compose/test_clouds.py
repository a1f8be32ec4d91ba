"""Issue 15 in compose: each cloud's ModelCache volumes use the ReadWriteMany class its cluster
component creates (none on Vultr, which is warned about at plan time), and the DRA driver reads the
NVIDIA driver where each cloud installs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import Fleet, InferenceCluster
from modelplane.cli import main
from modelplane.compose import Settings, serving_stack
from tests.builders import API, pool
from tests.compose.helpers import H100, compose, deployment, find, model_cache
from tests.pulumi.test_clouds import EXAMPLE

SETTINGS = Settings(aks_rwx_storage_class="azurefile-rwx", nebius_rwx_storage_class="nebius-rwx")
BLOCKS: dict[str, dict[str, Any]] = {
    "GKE": {"gke": {"region": "us-central1", "project": "p"}}, "AKS": {"aks": {"location": "westeurope"}},
    "Nebius": {"nebius": {}}, "Vultr": {"vultr": {"region": "ewr"}},
    "Existing": {"existing": {"secretRef": {"name": "byo"}, "cache": {"storageClassName": "nfs-rwx"}}},
}


def on(source: str) -> InferenceCluster:
    name = f"{source.lower()}-a"
    pool_name = "gpuh100" if source == "AKS" else "h100"
    return InferenceCluster.model_validate({
        "apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": name},
        "spec": {"cluster": {"source": source, **BLOCKS[source]}, "nodePools": [pool(pool_name, "h100", nodes=8)]}})


@pytest.mark.parametrize(("source", "want"), [
    ("AKS", "azurefile-rwx"), ("Nebius", "nebius-rwx"), ("Existing", "nfs-rwx"),
])
def test_a_cache_volume_uses_the_clusters_readwritemany_class(source: str, want: str) -> None:
    cluster = on(source)
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights"),),
                       fleet=Fleet(clusters=(cluster,), classes=(H100,)), settings=SETTINGS)
    assert find(rendered.clusters[cluster.name], "PersistentVolumeClaim")["spec"]["storageClassName"] == want
    assert not rendered.warnings


def test_a_cache_on_vultr_is_warned_about_because_vultr_has_no_class_for_gpu_nodes() -> None:
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights"),),
                       fleet=Fleet(clusters=(on("Vultr"),), classes=(H100,)), settings=SETTINGS)
    assert "storageClassName" not in find(rendered.clusters["vultr-a"], "PersistentVolumeClaim")["spec"]
    assert [warning.message for warning in rendered.warnings] == [
        "cluster 'vultr-a' runs on Vultr, which offers no ReadWriteMany StorageClass usable on GPU nodes (Vultr File "
        "System volumes do not attach to them), so the cache's volume uses the default StorageClass and may never "
        "bind; serve single-node engines there without a ModelCache"]


def test_modelplane_plan_warns_about_a_cache_on_vultr_without_rendering(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    fleet = [doc for doc in yaml.safe_load_all((EXAMPLE / "fleet.yaml").read_text())
             if doc["metadata"]["name"] in ("vultr-ewr", "vultr-l40s-1x")]
    qwen = next(yaml.safe_load_all((EXAMPLE / "model.yaml").read_text()))
    qwen["spec"]["modelCacheRef"] = {"name": "qwen"}
    weights = {"apiVersion": API, "kind": "ModelCache", "metadata": {"name": "qwen", "namespace": "ml-team"},
               "spec": {"huggingFace": {"repo": "Qwen/Qwen3-8B", "sizeGiB": 20}}}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([*fleet, qwen, weights]))
    assert main(["plan", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1] for line in err] == [
        "warning: ModelCache ml-team/qwen: spec: cluster 'vultr-ewr' runs on Vultr, which offers no ReadWriteMany "
        "StorageClass usable on GPU nodes (Vultr File System volumes do not attach to them), so the cache's volume "
        "uses the default StorageClass and may never bind; serve single-node engines there without a ModelCache"]
    assert err[0].startswith(f"{tmp_path / 'fleet.yaml'}:")


@pytest.mark.parametrize(("source", "root"), [
    ("GKE", "/home/kubernetes/bin/nvidia"), ("AKS", "/"), ("Nebius", "/"), ("Vultr", "/"), ("Existing", "/"),
])
def test_the_dra_driver_reads_the_nvidia_driver_where_each_cloud_installs_it(source: str, root: str) -> None:
    dra = next(addon for addon in serving_stack(on(source), Settings()) if addon.name == "nvidia-dra-driver-gpu")
    assert dra.values["nvidiaDriverRoot"] == root
