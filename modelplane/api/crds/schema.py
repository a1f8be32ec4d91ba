"""pydantic model -> structural OpenAPI v3 schema, as a CustomResourceDefinition carries it.

`object_schema(model)` starts from pydantic's own JSON schema of the model (so types, required
fields, enums, bounds, lengths, patterns and defaults come from the same declarations the loader
validates with) and makes it what Kubernetes calls structural:
- every `$ref` is inlined and `X | None` becomes `X` (an optional field is one that is not
  required; null is never a value);
- every node has a `type` and a `description` (the field's docstring, else its model's or enum's;
  `field_doc` reads the docstrings here, since reading the models' source at import would slow every
  command that never needs them);
- `title` and `additionalProperties: false` are dropped (the API server prunes unknown fields, and
  kubectl's default server-side field validation reports them);
- defaults keep their content without nulls or empty collections, and are left out when nothing
  remains;
- the model's `rules.RULES` become `x-kubernetes-validations`, `rules.KEYWORDS` are merged in, and
  `rules.LIST_MAP_KEYS` mark lists unique by key.
Pure and deterministic: the same models always give the same schema, in declaration order.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel

from modelplane.api.crds.rules import KEYWORDS, LIST_MAP_KEYS, RULES
from modelplane.invariants import InvariantError

Schema = dict[str, Any]
_KEPT = ("type", "description", "default", "enum", "format", "minimum", "maximum", "minLength", "maxLength",
         "pattern", "minItems", "maxItems", "minProperties", "maxProperties")


def object_schema(model: type[BaseModel]) -> Schema:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return _Converter(defs, models_by_name(model)).definition(raw, model.__name__)


def models_by_name(model: type[BaseModel]) -> dict[str, type]:
    """Every model and enum reachable from `model`, by the name pydantic gives its definition."""
    found: dict[str, type] = {}

    def visit(annotation: Any) -> None:
        for arg in typing.get_args(annotation):
            visit(arg)
        if isinstance(annotation, type) and annotation.__name__ not in found:
            if issubclass(annotation, BaseModel):
                found[annotation.__name__] = annotation
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            elif hasattr(annotation, "__members__"):
                found[annotation.__name__] = annotation

    visit(model)
    return found


def field_doc(model: type[BaseModel], name: str) -> str | None:
    """A field's description: its `Field(description=...)`, else the docstring right under its
    declaration in the class that declares it (what pydantic's `use_attribute_docstrings` reads)."""
    declared = model.model_fields[name].description
    if declared is not None:
        return declared
    owner = next(c for c in model.__mro__ if name in c.__dict__.get("__annotations__", {}))
    return _attribute_docstrings(owner).get(name)


@cache
def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstring under each annotated attribute of the class's body, cleaned as pydantic does."""
    source = inspect.getsource(cls)
    body = typing.cast(ast.ClassDef, ast.parse(textwrap.dedent(source)).body[0]).body
    return {statement.target.id: inspect.cleandoc(after.value.value)
            for statement, after in zip(body, body[1:])
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)}


def one_line(text: str) -> str:
    return " ".join(text.split())


class _Converter:
    def __init__(self, defs: dict[str, Schema], models: dict[str, type]):
        self.defs = defs
        self.models = models
        self.converted: dict[str, Schema] = {}

    def node(self, schema: Schema) -> Schema:
        """One property's schema: its own keywords over the definition it refers to."""
        ref = schema.get("$ref")
        options = [option for option in schema.get("anyOf", schema.get("allOf", ())) if option != {"type": "null"}]
        if len(options) > 1:
            raise InvariantError(f"a union the CRD schema cannot express: {schema}")
        if ref is not None:
            base = self.by_name(ref.rsplit("/", 1)[-1])
        elif options:
            base = self.node(options[0])
        else:
            base = {}
        return {**base, **self.keywords(schema)}

    def by_name(self, name: str) -> Schema:
        if name not in self.converted:
            self.converted[name] = self.definition(self.defs[name], name)
        return self.converted[name]

    def definition(self, schema: Schema, name: str) -> Schema:
        """A model's (or enum's) schema, with its fields' descriptions and the rules that belong to the model."""
        model = self.models.get(name)
        if model is not None and issubclass(model, BaseModel) and "properties" in schema:
            schema = {**schema, "properties": _described(model, schema["properties"])}
        converted = self.node(schema)
        if model is not None and issubclass(model, BaseModel):
            converted.update(KEYWORDS.get(model, {}))
            for (owner, field), keys in LIST_MAP_KEYS.items():
                if owner is model:
                    converted["properties"][field] = {**converted["properties"][field],
                                                      "x-kubernetes-list-type": "map",
                                                      "x-kubernetes-list-map-keys": list(keys)}
            if model in RULES:
                converted["x-kubernetes-validations"] = [rule.to_schema() for rule in RULES[model]]
        return converted

    def keywords(self, schema: Schema) -> Schema:
        found = {key: schema[key] for key in _KEPT if key in schema}
        if "description" in found:
            found["description"] = one_line(found["description"])
        if "default" in found:
            default = _without_empties(found.pop("default"))
            if default is not None:
                found["default"] = default
        if "properties" in schema:
            found["type"] = "object"
            found["properties"] = {name: self.node(prop) for name, prop in schema["properties"].items()}
            if schema.get("required"):
                found["required"] = list(schema["required"])
        elif isinstance(schema.get("additionalProperties"), dict):
            found["additionalProperties"] = self.node(schema["additionalProperties"])
        if "items" in schema:
            found["items"] = self.node(schema["items"])
        return found


def _described(model: type[BaseModel], properties: dict[str, Schema]) -> dict[str, Schema]:
    """The model's property schemas, each with its field's description (`field_doc`) when it has one."""
    aliases = {field.alias or name: name for name, field in model.model_fields.items()}
    described = {}
    for key, prop in properties.items():
        doc = field_doc(model, aliases[key])
        described[key] = {**prop, "description": doc} if doc is not None else prop
    return described


def _without_empties(value: Any) -> Any:
    """A default without nulls and empty collections; None when nothing is left."""
    if isinstance(value, dict):
        kept = {key: item for key, item in ((k, _without_empties(v)) for k, v in value.items()) if item is not None}
        return kept or None
    if isinstance(value, list):
        return value or None
    return value
