"""The last accepted version of every control-cluster object, as the stack keeps it between runs.

In control-cluster mode each run records the manifest form (`served.manifest_form`) of every object
it planned with, as one JSON text (`record`), which the program exports as a stack output. The next
run reads its own stack's outputs back and `read_record` turns that output into `Accepted`: the
previous run's versions, by object. When the loader refuses an object's current version, the run
plans with the accepted one instead (`served.load_served`), so a refusal never removes what the
object owns.

What comes back from the state is data to check, never to trust: `read_record` keeps only a record
of the expected shape (version, one entry per object, kinds of the API, names as strings, no object
twice) and the loader validates every accepted version it is asked to plan with, like any manifest.
A record that fails the shape check is unusable as a whole (`known` False, with why). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.api.base import API_VERSION
from modelplane.api.manifests import ObjectKey

OUTPUT = "acceptedObjects"
"""The stack output that holds the record."""
VERSION = 1
KINDS = frozenset(("InferenceClass", "InferenceCluster", "InferenceGateway", "ModelDeployment", "ModelCache",
                   "ModelService", "ModelEndpoint"))


@dataclass(frozen=True)
class Accepted:
    """The versions the previous run planned with."""

    objects: Mapping[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    known: bool = True
    """False when the stack has run before but holds no usable record (an earlier version of the
    program, or a record that failed the shape check): what a refused object owns is then unknown."""
    why: str = ""
    """Why the record is unusable (empty when `known`)."""


NOTHING = Accepted()
"""A stack that never ran: nothing was accepted, so nothing is owned."""


def record(forms: Iterable[dict[str, Any]]) -> str:
    """The record of `forms` (manifest forms): sorted by object, byte-identical for the same objects."""
    objects = sorted(forms, key=_key)
    return json.dumps({"version": VERSION, "objects": objects}, sort_keys=True, separators=(",", ":"))


def read_record(outputs: Mapping[str, Any] | None) -> Accepted:
    """`Accepted` from the stack's previous outputs (None or empty: the stack never ran)."""
    if not outputs:
        return NOTHING
    if OUTPUT not in outputs:
        return Accepted(known=False, why=f"the stack's state has no {OUTPUT} output (written by an earlier version "
                                         "of the program, or by a run in files mode)")
    text = outputs[OUTPUT]
    try:
        document = json.loads(text) if isinstance(text, str) else None
    except ValueError as error:
        return Accepted(known=False, why=f"the {OUTPUT} output is not JSON ({error})")
    if not isinstance(document, dict) or document.get("version") != VERSION or not isinstance(
            document.get("objects"), list):
        return Accepted(known=False, why=f"the {OUTPUT} output is not a version-{VERSION} record")
    objects: dict[ObjectKey, dict[str, Any]] = {}
    for index, form in enumerate(document["objects"]):
        problem = _shape_problem(form)
        if problem:
            return Accepted(known=False, why=f"the {OUTPUT} output's object {index} {problem}")
        key = _key(form)
        if key in objects:
            return Accepted(known=False, why=f"the {OUTPUT} output holds {key[0]} {_name(key)} twice")
        objects[key] = form
    return Accepted(objects)


def _shape_problem(form: Any) -> str:
    if not isinstance(form, dict):
        return "is not an object"
    if form.get("apiVersion") != API_VERSION or form.get("kind") not in KINDS:
        return f"is not a {API_VERSION} kind"
    metadata = form.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str) or not isinstance(
            metadata.get("namespace", ""), str):
        return "has no metadata.name"
    return ""


def _key(form: Mapping[str, Any]) -> ObjectKey:
    metadata = form["metadata"]
    return form["kind"], metadata.get("namespace", ""), metadata["name"]


def _name(key: ObjectKey) -> str:
    return f"{key[1]}/{key[2]}" if key[1] else key[2]
