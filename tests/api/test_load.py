"""Loading: files and directories, multi-document streams, determinism, the plain-data round trip."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, dump_objects, load, load_objects, load_sources
from tests.api.test_rules import FILES

EXAMPLES = Path(__file__).parent.parent.parent / "examples"


def test_a_directory_is_read_recursively_skipping_hidden_entries(tmp_path: Path) -> None:
    (tmp_path / "fleet" / "classes").mkdir(parents=True)
    (tmp_path / "fleet" / "classes" / "h100.yml").write_text(FILES["class.yaml"])
    (tmp_path / "fleet" / "cluster.yaml").write_text(FILES["cluster.yaml"])
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "broken.yaml").write_text("{{{")
    (tmp_path / "README.md").write_text("# not a manifest")
    assert load([tmp_path]).counts() == {"InferenceClass": 1, "InferenceCluster": 1}


def test_one_stream_may_hold_many_documents_and_empty_ones() -> None:
    stream = "---\n" + "\n---\n".join(FILES.values()) + "\n---\n# trailing comment\n"
    manifests = load_sources([("all.yaml", stream)])
    assert manifests.counts() == {"InferenceClass": 1, "InferenceCluster": 1, "InferenceGateway": 1,
                                  "ModelCache": 1, "ModelDeployment": 1, "ModelService": 1}


def test_file_order_does_not_change_the_result() -> None:
    items = sorted(FILES.items())
    shuffled = items[:]
    random.Random(3).shuffle(shuffled)
    assert load_sources(items) == load_sources(shuffled)


def test_origins_remember_the_file_and_line() -> None:
    manifests = load_sources([("all.yaml", FILES["class.yaml"] + "---\n" + FILES["cache.yaml"])])
    cache = manifests.workloads.caches[0]
    origin = manifests.origin(cache)
    assert (origin.file, origin.line, origin.line_of(("spec", "huggingFace", "sizeGiB"))) == ("all.yaml", 22, 28)


def test_a_namespaced_object_without_namespace_is_in_default() -> None:
    manifests = load_sources([("c.yaml", FILES["cache.yaml"].replace("  namespace: ml\n", ""))])
    assert manifests.workloads.caches[0].namespace == "default"


def test_plain_data_round_trips_through_load_objects() -> None:
    manifests = load([EXAMPLES / "multi-cloud"])
    again = load_objects(dump_objects(manifests))
    assert again.fleet == manifests.fleet
    assert again.workloads == manifests.workloads


def test_load_objects_reports_problems_by_position() -> None:
    objects = dump_objects(load([EXAMPLES / "qwen3-8b"]))
    objects[2]["spec"]["replicas"] = 0
    with pytest.raises(ManifestErrors) as errors:
        load_objects(objects, source="placement inputs")
    assert str(errors.value) == ("placement inputs:3: ModelDeployment ml-team/qwen3-8b: spec.replicas: must be at "
                                 "least 1; got int 0")
