"""pydantic validation errors -> (location, message) in the manifest's own words.

pydantic reports every problem with a location and a type code; this module rewrites each into a
sentence that says what is wrong and what is allowed (`unknown field 'copy'; allowed here: copies,
members, name, phase`), using the camelCase names the user wrote. Validator messages (our own
`ValueError`s) pass through unchanged, and a `FieldError` extends the location below the model.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from modelplane.api.base import FieldError

Loc = tuple[str | int, ...]

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "tuple_type": "a list",
    "list_type": "a list",
}


def describe(error: dict[str, Any], model: type[BaseModel]) -> tuple[Loc, str] | None:
    """The user-facing location and message of one pydantic error against `model`.

    None for an error pydantic reports in passing: a variadic tuple whose items failed is also
    reported as too short, with an input that is in fact long enough.
    """
    loc: Loc = tuple(part for part in error["loc"] if part != "[key]")
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    given = error.get("input")
    if kind == "value_error" and isinstance(ctx.get("error"), FieldError):
        return (*loc, *ctx["error"].loc), str(ctx["error"])
    if kind in ("value_error", "assertion_error"):
        return loc, str(ctx.get("error", error["msg"]))
    if kind == "missing":
        return loc, f"{loc[-1]} is required"
    if kind == "extra_forbidden":
        allowed = ", ".join(sorted(_fields_at(model, loc[:-1])))
        return loc, f"unknown field {loc[-1]!r}; allowed here: {allowed}"
    if kind in _TYPE_NAMES:
        return loc, f"expected {_TYPE_NAMES[kind]}, got {_show(given)}{_quote_hint(kind, given)}"
    if kind in ("enum", "literal_error"):
        return loc, f"must be one of {ctx['expected']}; got {_show(given)}"
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = "at least" if kind == "greater_than_equal" else "at most"
        limit = ctx.get("ge", ctx.get("le"))
        return loc, f"must be {bound} {limit}; got {_show(given)}"
    if kind == "too_short":
        if isinstance(given, (list, tuple)) and len(given) >= ctx["min_length"]:
            return None
        return loc, f"needs at least {ctx['min_length']} item(s); got {ctx.get('actual_length', 0)}"
    if kind == "too_long":
        return loc, f"allows at most {ctx['max_length']} item(s); got {ctx.get('actual_length')}"
    if kind == "string_too_short":
        return loc, "must not be empty"
    if kind == "string_too_long":
        return loc, f"must be at most {ctx['max_length']} characters; got {len(given)}"
    if kind == "string_pattern_mismatch":
        return loc, f"{_show(given)} does not match the required pattern {ctx['pattern']}"
    return loc, error["msg"]


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    text = repr(value) if isinstance(value, str) else f"{type(value).__name__} {value!r}"
    return text if len(text) <= 60 else text[:57] + "..."


def _quote_hint(kind: str, given: Any) -> str:
    if kind == "string_type" and (isinstance(given, (bool, int, float)) or type(given).__name__ in ("date", "datetime")):
        return " (quote it to make it a string)"
    return ""


def _fields_at(model: type[BaseModel], loc: Loc) -> list[str]:
    """The field names (as written in YAML) of the model found at `loc` below `model`."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(part, int):
            args = typing.get_args(annotation)
            annotation = args[0] if args else Any
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = next((f for name, f in annotation.model_fields.items() if (f.alias or name) == part), None)
            annotation = field.annotation if field else Any
        else:  # a map: its values' type
            args = typing.get_args(annotation)
            annotation = args[1] if len(args) == 2 else Any
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [field.alias or name for name, field in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated[...] and `X | None` down to the type that holds fields or items."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
        else:
            return annotation
