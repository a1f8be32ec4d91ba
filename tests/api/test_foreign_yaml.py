"""YAML that is not a Kubernetes object at all (a Helm values file, Pulumi.yaml, a CI workflow) kept in a
manifests folder is skipped with one `foreign-kind` warning per document, as a document of another API
group is; `strict` makes each an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, load
from modelplane.api.loader import FOREIGN_KIND, NOT_KUBERNETES

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qwen3-8b"
FOREIGN = {
    "values.yaml": "replicaCount: 2\nimage:\n  repository: vllm/vllm-openai\n  tag: v0.23.0\n",
    "Pulumi.yaml": "name: team-fleet\nruntime:\n  name: python\n",
    "ci.yml": "name: preview\non:\n  pull_request: {}\njobs:\n  preview:\n    runs-on: ubuntu-latest\n",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "fleet")
    for name, text in FOREIGN.items():
        (tmp_path / "fleet" / name).write_text(text)
    return tmp_path / "fleet"


def test_each_foreign_file_is_one_warning_and_the_fleet_loads_as_without_it(folder: Path) -> None:
    manifests = load([folder])
    foreign = [(Path(w.file).name, w.line, w.code, w.message) for w in manifests.warnings if w.code == FOREIGN_KIND]
    assert foreign == sorted((name, 1, FOREIGN_KIND, NOT_KUBERNETES) for name in FOREIGN)
    assert manifests.counts() == load([EXAMPLE]).counts()


def test_strict_makes_each_an_error(folder: Path) -> None:
    with pytest.raises(ManifestErrors) as raised:
        load([folder], strict=True)
    assert sorted(Path(e.file).name for e in raised.value.errors) == sorted(FOREIGN)


def test_a_kind_without_apiversion_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "typo.yaml").write_text("kind: ModelDeployment\nmetadata: {name: x}\nspec: {}\n")
    with pytest.raises(ManifestErrors) as raised:
        load([tmp_path])
    assert [e.code for e in raised.value.errors] == ["api-version"]
