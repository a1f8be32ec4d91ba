"""`ModelDeployment.key` (`namespace/name`) is kept on the deployment for the scheduler's hot path,
and is never stale on a copy: pydantic's `model_copy` copies what an instance holds (issue 21)."""

from __future__ import annotations

from pathlib import Path

from modelplane.api import ModelDeployment, load

DEMO = Path(__file__).resolve().parents[2] / "examples" / "multi-cloud"


def _deployment() -> ModelDeployment:
    return next(d for d in load([DEMO]).workloads.deployments if d.key == "ml-team/qwen3-8b")


def test_a_copy_with_other_metadata_has_its_own_key() -> None:
    deployment = _deployment()
    assert deployment.key == "ml-team/qwen3-8b"  # read first, so the copy carries what it keeps
    renamed = deployment.model_copy(update={"metadata": deployment.metadata.model_copy(update={"name": "other"})})
    moved = deployment.model_copy(update={"metadata": deployment.metadata.model_copy(update={"namespace": "ops"})})
    assert (renamed.key, moved.key) == ("ml-team/other", "ops/qwen3-8b")
    assert deployment.key == "ml-team/qwen3-8b"


def test_a_copy_with_the_same_metadata_keeps_the_key() -> None:
    deployment = _deployment()
    deployment.key
    scaled = deployment.model_copy(update={"spec": deployment.spec.model_copy(update={"replicas": 5})})
    assert scaled.key == "ml-team/qwen3-8b" and scaled.spec.replicas == 5


def test_the_kept_key_is_not_part_of_the_model() -> None:
    """It changes neither equality nor the dump."""
    read, fresh = _deployment(), _deployment()
    read.key
    assert read == fresh
    assert read.model_dump() == fresh.model_dump() and "_key" not in read.model_dump()
