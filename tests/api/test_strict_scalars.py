"""Strict scalars: no field of any kind reads `'yes'`, `"1"` or `1` as true, or `"3"` as 3
(pydantic's lax mode would; `zeroDowntimeRollouts: 'yes'` was read as true)."""

from __future__ import annotations

import types
import typing

import pydantic
import pytest

from modelplane.api import ManifestErrors, load_sources
from modelplane.api.loader import KINDS


def _loose(annotation: object, metadata: list[object], where: str, seen: set[type]) -> list[str]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *more = typing.get_args(annotation)
        return _loose(inner, [*metadata, *more], where, seen)
    if annotation in (bool, int, float):
        flat = [inner for m in metadata for inner in (m.metadata if isinstance(m, pydantic.fields.FieldInfo) else [m])]
        strict = any(isinstance(m, pydantic.types.Strict) and m.strict for m in flat)
        return [] if strict else [where]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return _fields(annotation, seen)
    keep = metadata if origin in (typing.Union, types.UnionType) else []
    return [found for arg in typing.get_args(annotation) for found in _loose(arg, keep, where, seen)]


def _fields(cls: type[pydantic.BaseModel], seen: set[type]) -> list[str]:
    if cls in seen:
        return []
    seen.add(cls)
    return [found for name, field in cls.model_fields.items()
            for found in _loose(field.annotation, list(field.metadata), f"{cls.__name__}.{name}", seen)]


def test_every_bool_and_number_field_of_every_kind_is_strict() -> None:
    seen: set[type] = set()
    assert [found for cls in KINDS.values() for found in _fields(cls, seen)] == []
    assert len(seen) > 50, "the walk reached the nested models"


CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: c}
spec:
  cluster: {source: Existing, existing: {kubeconfig: cKubeconfig}}
  nodePools:
  - {name: p, className: k, nodeCount: 1, zeroDowntimeRollouts: VALUE}
"""


@pytest.mark.parametrize("value", ["'yes'", "'true'", "1", "'1'", "'on'"])
def test_a_boolean_written_as_text_or_number_is_refused(value: str) -> None:
    with pytest.raises(ManifestErrors, match=r"spec.nodePools\[0\].zeroDowntimeRollouts: "):
        load_sources([("c.yaml", CLUSTER.replace("VALUE", value))])
