"""The CRDs refuse what the loader refuses: every validator of the API's models is either said by the
generated CRDs or listed here as what a CRD cannot say, and the patterns the CRDs check agree with the
parsers the loader uses (never refusing what the loader reads).

The validators are found by introspection (pydantic's field and model validators, and the
`AfterValidator`/`BeforeValidator` of every field's type), so a new one fails
`test_every_validator_is_in_the_crds_or_listed_as_loader_only` until it is placed. Rules across objects
(references, duplicates, one gateway per fleet: `api.refs`) are not validators of one model and are the
loader's alone; tests/api/test_refusal_holds.py covers what a control-cluster run does with them.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.functional_validators import AfterValidator, BeforeValidator

from modelplane.api import values
from modelplane.api.base import LABEL_KEY_PATTERN, label_key_problem
from modelplane.api.crds import SERVED_KINDS
from modelplane.api.crds.rules import KEYWORDS, LIST_MAP_KEYS, RULES
from modelplane.api.crds.schema import models_by_name
from modelplane.api.values import QUANTITY_PATTERN, SEMVER_PATTERN
from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import SemverError, parse_semver

METADATA = ("ObjectMeta", "ClusterMeta", "UserObjectMeta", "ServingObjectMeta")
"""Models of `metadata`: the API server validates an object's metadata itself (names, namespaces, label
and annotation syntax), and each kind's `name_rules` add the loader's name rules."""

LOADER_ONLY: dict[str, str] = {
    "check_cel": "a selector must compile as Kubernetes CEL: no CEL function compiles CEL held in a string",
    "check_pem_certificates": "the CA bundle must parse as PEM X.509 certificates: no CEL function parses them",
    "check_address_pool": "a MetalLB range's ends must be IP addresses of one family, in order (not written as a "
                          "CEL rule yet: the offline CEL reference, cel-python, has no IP library to test it with)",
    "check_attribute_name": "the names are map keys: a rule over every key of an unbounded map exceeds the API "
                            "server's CEL cost budget",
    "check_labels": "LabelSelector.matchLabels keys and values are map keys and values (as above)",
    "check_user_labels": "pod template labels: map keys (as above), and the reserved modelplane.ai keys",
    "check_pod_annotations": "pod template annotations: map keys (as above), and the confinement values",
    "check_annotations": "pod template annotations: map keys (as above), and the 256 KiB total",
    "ModelEndpointSpec._not_inside": "an endpoint's host must not be a private, loopback or link-local address: an "
                                     "address family and range test no CEL rule here expresses",
}
"""Validators no CRD says, with why."""


def validators() -> set[tuple[str, str]]:
    """(validator, where) of every validator below the served kinds: `Model` for model and field validators,
    `Model.field` for a validator of a field's type."""
    models = {m for served in SERVED_KINDS for m in models_by_name(served.model).values()
              if isinstance(m, type) and issubclass(m, BaseModel)}
    found: set[tuple[str, str]] = set()

    def annotated(annotation: Any, where: str) -> None:
        for meta in getattr(annotation, "__metadata__", ()):
            if isinstance(meta, (AfterValidator, BeforeValidator)):
                found.add((_name(meta.func), where))
        for arg in typing.get_args(annotation):
            annotated(arg, where)

    for model in models:
        decorators = model.__pydantic_decorators__
        found.update((f"{model.__name__}.{name}", model.__name__)
                     for name in (*decorators.field_validators, *decorators.model_validators))
        for name, field in model.model_fields.items():
            for meta in field.metadata:
                if isinstance(meta, (AfterValidator, BeforeValidator)):
                    found.add((_name(meta.func), f"{model.__name__}.{name}"))
            annotated(field.annotation, f"{model.__name__}.{name}")
    return found


def _name(func: Any) -> str:
    """A validator's name (`values._checker` makes `check_quantity` and `check_version`, both named `check`)."""
    made = {id(value): name for name, value in vars(values).items() if name.startswith("check_")}
    return made.get(id(func), func.__qualname__)


def field_schema(where: str) -> dict[str, Any]:
    """The JSON schema pydantic gives the field (what the CRD generator starts from)."""
    model_name, _, field = where.partition(".")
    model = next(m for served in SERVED_KINDS for m in models_by_name(served.model).values()
                 if getattr(m, "__name__", "") == model_name)
    schema = model.model_json_schema(by_alias=True)
    alias = model.model_fields[field].alias or field
    node = schema["properties"][alias]
    options = [o for o in node.get("anyOf", [node]) if o != {"type": "null"}]
    return options[0]


def said_by_the_crd(validator: str, where: str) -> bool:
    model_name = where.partition(".")[0]
    if model_name in METADATA:
        return True
    if "." not in where:  # a model or field validator: a rule, a keyword or a list key of the model
        return model_name in {m.__name__ for m in (*RULES, *KEYWORDS, *(owner for owner, _ in LIST_MAP_KEYS))}
    return "pattern" in field_schema(where)


def test_every_validator_is_in_the_crds_or_listed_as_loader_only() -> None:
    found = validators()
    assert len(found) > 60
    unplaced = sorted((v, w) for v, w in found if v not in LOADER_ONLY and not said_by_the_crd(v, w))
    assert unplaced == [], "a validator neither in the CRDs nor in LOADER_ONLY"
    assert set(LOADER_ONLY) <= {v for v, _ in found}, "LOADER_ONLY names a validator that no longer exists"


@pytest.mark.parametrize(("text", "ok"), [
    ("80Gi", True), ("81559Mi", True), ("1.5G", True), ("400", True), ("100m", True), ("+1e3", True), (".5", True),
    ("5.", True), ("1Ki", True), ("-2E-3", True), ("80GB", False), ("80 Gi", False), ("1.2.3", False), ("1ki", False),
    ("0x10", False), ("1e", False), ("80gi", False),
])
def test_the_quantity_pattern_and_the_parser_agree_on_examples(text: str, ok: bool) -> None:
    assert bool(re.search(QUANTITY_PATTERN, text)) is ok
    assert _parses(parse_quantity, QuantityError, text) is ok


@given(st.from_regex(QUANTITY_PATTERN, fullmatch=True) | st.text(alphabet="0123456789.+-eEinumkKMGTP ", max_size=8))
def test_the_crd_never_refuses_a_quantity_the_loader_reads(text: str) -> None:
    if _parses(parse_quantity, QuantityError, text):
        assert re.search(QUANTITY_PATTERN, text), text


@pytest.mark.parametrize(("text", "ok"), [
    ("9.0.0", True), ("1.2.3-rc.1", True), ("1.2.3+build.7", True), ("1.2.3-0a.1+x-y", True), ("9.0", False),
    ("v1.2.3", False), ("01.2.3", False), ("1.2.3-01", False), ("1.2.3-", False), ("1.2.3+", False), ("1.2.3.4", False),
])
def test_the_semver_pattern_and_the_parser_agree_on_examples(text: str, ok: bool) -> None:
    assert bool(re.search(SEMVER_PATTERN, text)) is ok
    assert _parses(parse_semver, SemverError, text) is ok


@given(st.from_regex(SEMVER_PATTERN, fullmatch=True) | st.text(alphabet="0123456789.+-abAB", max_size=12))
def test_the_crd_never_refuses_a_version_the_loader_reads(text: str) -> None:
    if _parses(parse_semver, SemverError, text):
        assert re.search(SEMVER_PATTERN, text), text


@given(st.from_regex(LABEL_KEY_PATTERN, fullmatch=True) | st.text(alphabet="ab.-_/9 A", max_size=12))
def test_the_crd_never_refuses_a_label_key_the_loader_reads(key: str) -> None:
    if label_key_problem(key) is None:
        assert re.search(LABEL_KEY_PATTERN, key), key


def _parses(parse: Any, error: type[Exception], text: str) -> bool:
    try:
        parse(text)
    except error:
        return False
    return True
