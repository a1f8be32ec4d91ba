"""The CRDs refuse what the loader refuses: every validator of the API's models is either said by the
generated CRDs or listed here as what a CRD cannot say. Quantities and versions are refused by both the loader
and the CRDs or read by both, and agree with Kubernetes' parsers within the bounds `api.values` names; other
patterns never refuse what the loader reads.

The validators are found by introspection (pydantic's field and model validators, and the
`AfterValidator`/`BeforeValidator` of every field's type), so a new one fails
`test_every_validator_is_in_the_crds_or_listed_as_loader_only` until it is placed. Rules across objects
(references, duplicates, one gateway per fleet: `api.refs`) are not validators of one model and are the
loader's alone; tests/api/test_refusal_holds.py covers what a control-cluster run does with them.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.functional_validators import AfterValidator, BeforeValidator

from modelplane.api import values
from modelplane.api.base import LABEL_KEY_PATTERN, label_key_problem
from modelplane.api.crds import SERVED_KINDS
from modelplane.api.crds.rules import KEYWORDS, LIST_MAP_KEYS, RULES
from modelplane.api.crds.schema import models_by_name
from modelplane.api.fleet import Attribute, Capacity
from modelplane.api.values import QUANTITY_PATTERN, SEMVER_PATTERN
from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import SemverError, parse_semver
from tests.api.crd_schema import schemas

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


@dataclass(frozen=True)
class Value:
    why: str
    text: str
    read: bool  # the loader and the CRD both read it (else both refuse it)
    kubernetes: bool | None = None  # what Kubernetes' parser says, when a bound of ours differs from it


# Quantities, traced through k8s.io/apimachinery v0.34.4 pkg/api/resource/quantity.go (parseQuantityString,
# then ParseQuantity: the int64 path when `precision >= 0` and `scale >= -9`, else inf.Dec's SetString of
# the number, which needs a digit) and suffix.go, or taken from quantity_test.go where a row says so.
QUANTITIES = [
    Value("binary suffix", "80Gi", True),
    Value("a device's published memory", "81559Mi", True),
    Value("decimal suffix with a fraction", "1.5G", True),
    Value("milli", "100m", True),
    Value("signed exponent", "+1e3", True),
    Value("exponent E with a sign", "-2E-3", True),
    Value("a lone dot is zero (TestParseQuantityString: num 0, denom empty)", ".", True),
    Value("a signed lone dot is zero (TestParseQuantityString's -. row)", "-.", True),
    Value("plus and a dot is zero", "+.", True),
    Value("a lone sign is zero (the leading-zeros loop reaches the end)", "+", True),
    Value("a trailing dot (TestQuantityParse)", "1.", True),
    Value("a dot before the suffix (TestQuantityParse)", "1.G", True),
    Value("a leading dot", ".5", True),
    Value("a suffix alone is zero on the int64 path", "Gi", True),
    Value("a dot and Ti: precision 15-1-12-1 >= 0, int64 path", ".Ti", True),
    Value("a dot and Pi: precision 15-1-15-1 < 0, SetString('.') fails", ".Pi", False),
    Value("Ei without digits: SetString('') fails", "Ei", False),
    Value("no digits, exponent -9: scale -9 keeps the int64 path", ".e-9", True),
    Value("no digits, exponent -10: scale -10 leaves it, SetString('.') fails", ".e-10", False),
    Value("leading zeros of an exponent do not count", "e-009", True),
    Value("digits and exponent -10: inf.Dec reads it, rounded up to 1n", "1e-10", True),
    Value("a trailing dot on the inf.Dec path", "1.Pi", True),
    Value("the empty string (ParseQuantity: len 0)", "", False),
    Value("decimal unit as letters", "80GB", False),
    Value("a space", "80 Gi", False),
    Value("two dots", "1.2.3", False),
    Value("lower-case ki (suffix.go has Ki only)", "1ki", False),
    Value("upper-case K alone", "1K", False),
    Value("hexadecimal", "0x10", False),
    Value("e without digits: ParseInt of an empty exponent", "1e", False),
    Value("a sign without exponent digits", "1e+", False),
    Value("an exponent of three digits: our bound", "1e999", True),
    Value("leading zeros before three exponent digits", "1e0000999", True),
    Value("an exponent of four digits: past our bound", "1e1000", False, kubernetes=True),
    Value("an exponent Kubernetes truncates to 32 bits (reads it as 1)", "1e4294967296", False, kubernetes=True),
    Value("64 characters: our bound", "1" * 64, True),
    Value("65 characters: past our bound", "1" * 65, False, kubernetes=True),
]

# Versions, traced through github.com/blang/semver/v4 v4.0.0 semver.go Parse (no leading zeros, numbers read by
# ParseUint(.., 10, 64), pre-release identifiers by NewPRVersion, build identifiers alphanumeric).
VERSIONS = [
    Value("a release", "9.0.0", True),
    Value("a pre-release", "1.2.3-rc.1", True),
    Value("build metadata", "1.2.3+build.7", True),
    Value("both, with hyphens", "1.2.3-0a.1+x-y", True),
    Value("build identifiers may have leading zeros", "1.2.3+001", True),
    Value("two parts", "9.0", False),
    Value("a v prefix (only normalizing drops it)", "v1.2.3", False),
    Value("a leading zero in major", "01.2.3", False),
    Value("a leading zero in a numeric pre-release", "1.2.3-01", False),
    Value("an empty pre-release", "1.2.3-", False),
    Value("empty build metadata", "1.2.3+", False),
    Value("four parts", "1.2.3.4", False),
    Value("19 digits: our bound", "9999999999999999999.0.0", True),
    Value("2^64-1 in 20 digits: past our bound", "18446744073709551615.0.0", False, kubernetes=True),
    Value("a 20-digit pre-release number: past our bound", "1.2.3-18446744073709551615", False, kubernetes=True),
    Value("2^64: ParseUint overflows", "18446744073709551616.0.0", False),
]

QUANTITY_FIELD = ("InferenceClass", "spec", "devices", "capacity", "value")
VERSION_FIELD = ("InferenceClass", "spec", "devices", "attributes", "version")


@pytest.mark.parametrize("case", QUANTITIES, ids=lambda c: c.why)
def test_the_loader_and_the_crd_agree_with_kubernetes_on_quantities(case: Value) -> None:
    assert _parses(parse_quantity, QuantityError, case.text) is (case.read if case.kubernetes is None else case.kubernetes)
    assert _loader_reads(Capacity, "value", case.text) is case.read
    assert _crd_admits(QUANTITY_FIELD, case.text) is case.read


@pytest.mark.parametrize("case", VERSIONS, ids=lambda c: c.why)
def test_the_loader_and_the_crd_agree_with_kubernetes_on_versions(case: Value) -> None:
    assert _parses(parse_semver, SemverError, case.text) is (case.read if case.kubernetes is None else case.kubernetes)
    assert _loader_reads(Attribute, "version", case.text) is case.read
    assert _crd_admits(VERSION_FIELD, case.text) is case.read


@given(st.from_regex(QUANTITY_PATTERN, fullmatch=True) | st.text(alphabet="0123456789.+-eEinumkKMGTP ", max_size=10))
def test_a_quantity_is_refused_by_both_or_read_by_both(text: str) -> None:
    assert _loader_reads(Capacity, "value", text) is _crd_admits(QUANTITY_FIELD, text), text


@given(st.from_regex(SEMVER_PATTERN, fullmatch=True) | st.text(alphabet="0123456789.+-abAB", max_size=12))
def test_a_version_is_refused_by_both_or_read_by_both(text: str) -> None:
    assert _loader_reads(Attribute, "version", text) is _crd_admits(VERSION_FIELD, text), text


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


def _loader_reads(model: type[BaseModel], field: str, text: str) -> bool:
    try:
        model.model_validate({field: text})
    except ValidationError:
        return False
    return True


def _crd_admits(where: tuple[str, ...], text: str) -> bool:
    """Whether the generated CRD's schema of the field (its pattern and length) admits `text`."""
    kind, *path = where
    node = schemas()[kind]
    for name in path:
        node = node["properties"][name]
        node = node.get("items") or node.get("additionalProperties") or node
    return jsonschema.Draft7Validator(node).is_valid(text)
