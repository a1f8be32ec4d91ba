"""Declared classes and selectors against what the cluster publishes, and the two commands that
show it (`modelplane classes`, `validate --against-slices`). The arithmetic is Kubernetes': 80Gi is
81920Mi, so an H100 that publishes 81559Mi (85520809984 bytes, measured through NVML) has less."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from modelplane.api import load
from modelplane.api.slices import read_published
from modelplane.cli import main
from modelplane.compose.published import published_findings
from tests.nvidia import DEVICE_CLASS, H100, L4, node, resource_slice

DATA = Path(__file__).parents[1] / "data" / "resourceslices"
SLICES = str(DATA / "h100-l4.yaml")
DECLARED = str(DATA / "declared.yaml")
KIMI = Path(__file__).parents[2] / "examples" / "kimi-k2"


def findings(paths: list[str], items: list[dict]) -> list[tuple[str, str, str]]:
    manifests = load(paths)
    cluster = manifests.fleet.clusters[0]
    return [(f.obj.kind, "/".join(map(str, f.loc)), f.message)
            for f in published_findings(manifests, cluster, read_published(items, "test"))]


def test_a_class_written_from_the_cards_name_is_caught_on_every_count() -> None:
    with open(SLICES) as file:
        items = yaml.safe_load(file)["items"]
    found = findings([DECLARED], items)
    assert [(kind, loc) for kind, loc, _ in found] == [
        ("InferenceClass", "spec/devices/0/count"),
        ("InferenceClass", "spec/devices/0/attributes/index"),
        ("InferenceClass", "spec/devices/0/capacity/memory"),
        ("ModelDeployment", "spec/engines/0/members/0/nodeSelector/devices/0/selectors/0/cel"),
    ]
    assert "4 per node declared; each node of pool h100 of cluster onprem (gpu-node-a, gpu-node-b) publishes 8" in \
        found[0][2]
    assert "declared 80Gi; the devices of pool h100" in found[2][2] and "publish 81559Mi" in found[2][2]
    assert found[3][2].endswith('it evaluated to false; it read device.capacity["gpu.nvidia.com"].memory = 81559Mi')


def test_a_class_written_from_the_cluster_has_nothing_to_report() -> None:
    items = [node("n1", "medium"), resource_slice("n1", H100, 8), DEVICE_CLASS]
    # The H100 class of examples/kimi-k2 declares the measured facts; its H200 pool has no node yet
    # (nodeCount 0), which is not a difference.
    assert findings([str(KIMI / "fleet.yaml"), str(KIMI / "model.yaml")], items) == []


@pytest.mark.parametrize(("items", "loc", "message"), [
    ([node("n1", "h100"), node("n2", "l4"), resource_slice("n1", L4, 8), resource_slice("n2", L4, 1)],
     "spec/devices/0/attributes/architecture", "declared string 'Hopper'; pool h100 of cluster onprem (n1) "
                                               "publishes string 'Ada Lovelace'"),
    ([node("n9", "other"), node("n2", "l4"), resource_slice("n9", H100, 8), resource_slice("n2", L4, 1)],
     "spec/nodePools", "1 node(s) publishing devices (n9) carry no modelplane.ai/pool label of this cluster's pools"),
], ids=["another card than declared", "a node of no pool"])
def test_each_difference_is_pointed_at(items: list[dict], loc: str, message: str) -> None:
    assert any(found_loc == loc and message in text for _, found_loc, text in findings([DECLARED], items))


def test_a_driver_the_nodes_do_not_run() -> None:
    other = resource_slice("n2", L4, 1)
    other["spec"]["driver"] = "gpu.example.com"
    found = findings([DECLARED], [node("n2", "l4"), other])
    assert ("InferenceClass", "spec/devices/0/driver", "the nodes of pool l4 of cluster onprem (n2) publish no device "
            "of driver gpu.nvidia.com (they publish: gpu.example.com)") in found


def test_classes_prints_a_block_that_validates_clean_against_its_own_slices(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classes", SLICES]) == 0
    printed = capsys.readouterr().out
    blocks = {"h100": None, "l4": None}
    for text in printed.split("---\n"):
        pool = text.split("# pool ")[1].split(":")[0]
        blocks[pool] = yaml.safe_load(text)["devices"]
    documents = [{"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", "metadata": {"name": pool},
                  "spec": {"devices": devices}} for pool, devices in blocks.items()]
    documents.append({"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
                      "spec": {"cluster": {"source": "Existing", "existing": {"kubeconfig": "k"}},
                               "nodePools": [{"name": pool, "className": pool} for pool in blocks],
                               "gateway": {"auth": {"apiKeysSecret": "inference-api-keys"}}}})
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(documents))
    assert main(["validate", str(tmp_path / "fleet.yaml"), "--against-slices", SLICES]) == 0
    assert "warning" not in capsys.readouterr().err


def test_validate_against_slices_warns_and_still_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", DECLARED, "--against-slices", f"onprem={SLICES}"]) == 0
    err = capsys.readouterr().err
    assert err.count(": warning: ") == 4
    assert "declared.yaml:18: warning: InferenceClass h100-by-name: spec.devices[0].capacity.memory: declared 80Gi" \
        in err


@pytest.mark.parametrize(("argv", "message"), [
    (["validate", DECLARED, "--against-slices", "west=" + SLICES], "west=" + SLICES + ": no InferenceCluster 'west'"),
    (["validate", DECLARED, "--against-slices", "/no/such.yaml"], "/no/such.yaml: cannot read the file"),
    (["validate", str(KIMI.parent / "multi-cloud"), "--against-slices", SLICES], "name the cluster it describes as "
                                                                                 "CLUSTER="),
    (["classes", DECLARED], "not a ResourceSlice, Node or DeviceClass"),
    (["classes", "--kubeconfig", "/no/such/kubeconfig"], "cannot load a kubeconfig"),
], ids=["an unknown cluster", "no such file", "several clusters and no name", "not slices", "no kubeconfig"])
def test_bad_input_is_an_error_for_people(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    assert message in capsys.readouterr().err


def test_the_device_class_is_the_one_whose_selectors_accept_the_device() -> None:
    from modelplane.io.published import classes_text

    renamed = {**DEVICE_CLASS, "metadata": {"name": "gpu-full"}}
    mig_only = {**DEVICE_CLASS, "metadata": {"name": "mig"}, "spec": {"selectors": [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}}
    text = classes_text(read_published([node("n1", "l4"), resource_slice("n1", L4, 1), mig_only, renamed], "t"))
    assert "deviceClassName: gpu-full\n" in text
