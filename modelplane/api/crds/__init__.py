"""CustomResourceDefinitions of every kind of `modelplane.ai/v1alpha1`, generated from the pydantic models.

`custom_resource_definitions()` returns one CRD per kind (`kinds.SERVED_KINDS`), never written by
hand: the spec and status schemas come from the models (`schema.object_schema`: every field with its
description, required fields, enums, defaults, bounds), the cross-field rules that fit from
`rules`, and names, scope, subresources and printer columns from `kinds`. The loader remains the
authority: an object the API server accepts may still be refused when the program reads it.
Pure and deterministic: plain dicts, the same every time (`modelplane crds` prints them as YAML).
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from modelplane.api.base import API_VERSION
from modelplane.api.crds.kinds import CATEGORY, SERVED_KINDS, ServedKind
from modelplane.api.crds.rules import Rule
from modelplane.api.crds.schema import field_doc, object_schema, one_line
from modelplane.invariants import InvariantError

GROUP, VERSION = API_VERSION.split("/")
PART_OF = {"app.kubernetes.io/part-of": "modelplane"}
_API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object: "
                    f"{API_VERSION}.")
_KIND_DOC = "Kind is the REST resource this object represents."


def custom_resource_definitions() -> list[dict[str, Any]]:
    return [custom_resource_definition(served) for served in SERVED_KINDS]


def served_kind(kind: str) -> ServedKind:
    return next(served for served in SERVED_KINDS if served.kind == kind)


def custom_resource_definition(served: ServedKind) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string", "description": _API_VERSION_DOC},
        "kind": {"type": "string", "description": _KIND_DOC},
        "metadata": {"type": "object"},  # an API server takes no more: it validates metadata itself
        "spec": {**object_schema(_field_model(served, "spec")),
                 "description": f"The desired state: what the {served.kind} declares."},
    }
    if "status" in served.model.model_fields:
        description = field_doc(served.model, "status") or ""
        properties["status"] = {**object_schema(_field_model(served, "status")), "description": one_line(description)}
    version: dict[str, Any] = {
        "name": VERSION, "served": True, "storage": True,
        "schema": {"openAPIV3Schema": {
            "type": "object", "description": one_line(served.description), "required": ["spec"],
            "properties": properties, "x-kubernetes-validations": [rule.to_schema() for rule in served.name_rules]}},
        "additionalPrinterColumns": [column.to_schema() for column in served.columns],
    }
    subresources: dict[str, Any] = {}
    if served.status:
        subresources["status"] = {}
    if served.scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                                 "labelSelectorPath": ".status.selector"}
    if subresources:
        version["subresources"] = subresources
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": served.crd_name, "labels": dict(PART_OF)},
        "spec": {
            "group": GROUP,
            "names": {"kind": served.kind, "listKind": f"{served.kind}List", "plural": served.plural,
                      "singular": served.kind.lower(), "shortNames": list(served.short_names),
                      "categories": [CATEGORY]},
            "scope": "Namespaced" if served.namespaced else "Cluster",
            "versions": [version],
        },
    }


def _field_model(served: ServedKind, field: str) -> type[BaseModel]:
    annotation = served.model.model_fields[field].annotation
    model = next(arg for arg in typing.get_args(annotation) or (annotation,) if arg is not type(None))
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvariantError(f"{served.kind}.{field} is not a model")
    return model


__all__ = ["GROUP", "SERVED_KINDS", "VERSION", "Rule", "ServedKind", "custom_resource_definition",
           "custom_resource_definitions", "served_kind"]
