"""An offline stand-in for the API server validating a custom resource against a generated CRD.

What a kube-apiserver does on create, in its order: apply the schema's defaults, validate the
structural schema (unknown fields rejected, as `kubectl apply`'s server-side field validation
does), refuse duplicate keys in `x-kubernetes-list-type: map` lists, then evaluate every
`x-kubernetes-validations` rule on the defaulted object. CEL runs on cel-python, the project's CEL
reference; the real API server runs the same CRDs in tests/e2e/test_control_plane.py.
"""

from __future__ import annotations

import copy
import sys
from functools import cache
from typing import Any

import celpy
import jsonschema

from modelplane.api.crds import custom_resource_definitions


@cache
def schemas() -> dict[str, dict[str, Any]]:
    """Kind -> the openAPIV3Schema of its generated CRD."""
    return {crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            for crd in custom_resource_definitions()}


def problems(obj: dict[str, Any]) -> list[str]:
    """Why the API server would refuse `obj` (empty when it accepts it)."""
    schema = schemas()[obj["kind"]]
    value = with_defaults(schema, copy.deepcopy(obj))
    found = [f"{'.'.join(map(str, error.absolute_path))}: {error.message}"
             for error in jsonschema.Draft7Validator(_strict(schema)).iter_errors(value)]
    return found or list(_extensions(schema, value, ""))


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict) and "properties" in schema:
        for name, prop in schema["properties"].items():
            if name not in value and "default" in prop:
                value[name] = copy.deepcopy(prop["default"])
            if name in value:
                value[name] = with_defaults(prop, value[name])
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key in value:
            value[key] = with_defaults(schema["additionalProperties"], value[key])
    elif isinstance(value, list) and "items" in schema:
        value = [with_defaults(schema["items"], item) for item in value]
    return value


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        strict = {key: _strict(item) for key, item in schema.items()}
        if "properties" in strict:
            strict["additionalProperties"] = False
        return strict
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def _extensions(schema: dict[str, Any], value: Any, path: str):
    if schema.get("x-kubernetes-list-type") == "map":
        keys = schema["x-kubernetes-list-map-keys"]
        seen = [tuple(item.get(key) for key in keys) for item in value]
        for index, key in enumerate(seen):
            if key in seen[:index]:
                yield f"{path}[{index}]: Duplicate value: {dict(zip(keys, key))}"
    for rule in schema.get("x-kubernetes-validations", ()):
        if not evaluate(rule["rule"], value):
            yield f"{path}{rule.get('fieldPath', '')}: {rule['message']}"
    if isinstance(value, dict):
        for name, prop in schema.get("properties", {}).items():
            if name in value:
                yield from _extensions(prop, value[name], f"{path}.{name}")
        if isinstance(schema.get("additionalProperties"), dict):
            for key, item in value.items():
                yield from _extensions(schema["additionalProperties"], item, f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from _extensions(schema["items"], item, f"{path}[{index}]")


@cache
def _program(rule: str) -> Any:
    limit = sys.getrecursionlimit()
    try:
        environment = celpy.Environment()
    finally:
        sys.setrecursionlimit(limit)  # celpy.Environment raises it for the whole process; the project's CEL does not
    return environment.program(environment.compile(rule))


def evaluate(rule: str, value: Any) -> bool:
    result = _program(rule).evaluate({"self": celpy.json_to_cel(value)})
    assert isinstance(result, celpy.celtypes.BoolType), f"{rule!r} gave {result!r}, not a bool"
    return bool(result)
