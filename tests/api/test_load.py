"""Loading: files and directories, multi-document streams, determinism, the plain-data round trip."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import ManifestErrors, dump_objects, load, load_objects, load_sources
from modelplane.api.documents import parse_documents
from tests.api.test_rules import FILES

EXAMPLES = Path(__file__).parent.parent.parent / "examples"


def test_a_directory_is_read_recursively_skipping_hidden_entries(tmp_path: Path) -> None:
    (tmp_path / "fleet" / "classes").mkdir(parents=True)
    (tmp_path / "fleet" / "classes" / "h100.yml").write_text(FILES["class.yaml"])
    (tmp_path / "fleet" / "cluster.yaml").write_text(FILES["cluster.yaml"] + "  gateway: {publicInference: true}\n")
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
    objects[2]["spec"]["replicas"] = -1
    with pytest.raises(ManifestErrors) as errors:
        load_objects(objects, source="placement inputs")
    assert str(errors.value) == ("placement inputs:3: ModelDeployment ml-team/qwen3-8b: spec.replicas: must be at "
                                 "least 0; got int -1")


SAFE_LOAD_CASES = {
    "every scalar tag of the core schema": (
        "s: text\nq: 'quoted'\nn: ~\nn2: null\nempty:\nb: [yes, No, true, off]\ni: [0, -7, 0x1f, 017, 1_000, 1:30]\n"
        "f: [1.5, -.inf, .NaN, 6.8e+3]\nt: [2024-01-02, 2024-01-02T03:04:05Z]\nbin: !!binary aGk=\nforced: !!str 12\n"),
    "keys that are not strings": "1: one\ntrue: yes\n~: none\n2024-01-02: date\n",
    "nested sequences and mappings": "a:\n- b: [1, {c: [[]]}]\n  d: {}\n- []\n",
    "an alias and a merge key": "base: &base {x: 1}\nmerged:\n  <<: *base\n  y: 2\nsame: *base\n",
    "aliases of a mapping, a sequence and scalars": (
        "m: &m {x: [1, &two 2]}\ns: &s [*m, *two, &t 2024-01-02]\nagain: [*m, *s, *t]\n*two : key\n"),
    "a set and an ordered map": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\n",
    "a key that is a sequence": "? [a, b]\n: pair\n",
}


@pytest.mark.parametrize("text", SAFE_LOAD_CASES.values(), ids=SAFE_LOAD_CASES.keys())
def test_documents_hold_what_safe_load_gives(text: str) -> None:
    documents, problems = parse_documents("doc.yaml", text)
    if problems:  # PyYAML refuses it: so do we, at the same place
        with pytest.raises(yaml.YAMLError):
            yaml.safe_load(text)
        return
    assert [d.data for d in documents] == [yaml.safe_load(text)]
    assert [type(v) for v in _leaves(documents[0].data)] == [type(v) for v in _leaves(yaml.safe_load(text))]


def _leaves(value: object) -> list[object]:
    """Every key and value, depth first (== alone cannot tell 1 from 1.0 or True)."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (k, *_leaves(v))]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _shape(value: Any, seen: dict[int, int] | None = None) -> Any:
    """The data with each collection numbered by where it first appears: equal shapes share the
    same objects in the same places."""
    seen = {} if seen is None else seen
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return ("again", seen[id(value)])
        seen[id(value)] = len(seen)
        if isinstance(value, dict):
            return ("map", [(k, _shape(v, seen)) for k, v in value.items()])
        return ("list", [_shape(v, seen) for v in value])
    return (type(value).__name__, value)


values = st.recursive(st.one_of(st.integers(), st.text("ab1 :", max_size=3), st.booleans(), st.none()),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.text("abc", min_size=1, max_size=2), inner,
                                                              max_size=3)), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(values, values, st.sampled_from([None, False, True]))
def test_an_alias_gives_the_object_its_anchor_built_as_safe_load_does(shared: Any, other: Any,
                                                                       flow: bool | None) -> None:
    """Aliases are built by the walk (PyYAML's constructor is not run), object for object as
    `safe_load` builds them: the same values, the same sharing."""
    box = [shared]
    text = yaml.safe_dump({"a": box, "b": [box, other, {"c": box}], "d": box}, default_flow_style=flow)
    assert "*id001" in text
    with mock.patch.object(yaml.constructor.BaseConstructor, "construct_document",
                           side_effect=AssertionError("ran PyYAML's constructor")):
        documents, problems = parse_documents("doc.yaml", text)
    assert problems == []
    assert _shape(documents[0].data) == _shape(yaml.safe_load(text))
