"""Objects as an API server serves them (control-cluster mode) -> validated `Manifests`, bad ones skipped.

`load_served(items, source)` takes the items of the modelplane.ai lists, as plain JSON, and validates
them with the same loader as files. Of each object it keeps what a manifest holds (apiVersion, kind,
metadata name, namespace, labels, annotations, and spec): never status, server-managed metadata, or
kubectl's last-applied annotation (a copy of the whole object, which would make every apply look
like a change of the fleet's inputs).

Unlike files, one invalid object does not stop the fleet (one team's typo must not block the
others): it is skipped and its problems become warnings, and so, in turn, is every object that then
fails for want of it (a deployment whose ModelCache was skipped). With `strict=True` the problems
are errors, as they are for files. Problems name the object (`KIND NAMESPACE/NAME`) and the `source`
instead of a file and line. The objects come from the control cluster, so an InferenceGateway
without `spec.cluster` runs there (`load_objects(..., control_cluster=True)`). Pure: data in, data out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from modelplane.api.loader import load_objects
from modelplane.api.manifests import Manifests, ObjectKey
from modelplane.api.problems import ManifestErrors, Problem, Severity

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Observed:
    """What the API server said about an object besides its manifest."""

    uid: str
    generation: int
    """`metadata.generation`: what a status's `observedGeneration` reports."""


@dataclass(frozen=True)
class Served:
    manifests: Manifests
    """The valid objects, with the skipped objects' problems among the warnings."""
    observed: dict[ObjectKey, Observed]
    """Every object read, valid or not."""
    skipped: dict[ObjectKey, tuple[Problem, ...]]
    """The objects left out of `manifests`, with why."""


def object_key(item: Mapping[str, Any]) -> ObjectKey:
    metadata = item["metadata"]
    return item["kind"], metadata.get("namespace", ""), metadata["name"]


def manifest_form(item: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a user writes it (see the module docstring for what is left out)."""
    metadata = item["metadata"]
    kept: dict[str, Any] = {"name": metadata["name"]}
    if metadata.get("namespace"):
        kept["namespace"] = metadata["namespace"]
    if metadata.get("labels"):
        kept["labels"] = dict(metadata["labels"])
    annotations = {key: value for key, value in (metadata.get("annotations") or {}).items() if key != LAST_APPLIED}
    if annotations:
        kept["annotations"] = annotations
    manifest = {"apiVersion": item["apiVersion"], "kind": item["kind"], "metadata": kept}
    if "spec" in item:
        manifest["spec"] = item["spec"]
    return manifest


def load_served(items: Iterable[Mapping[str, Any]], source: str, *, strict: bool = False) -> Served:
    items = list(items)
    remaining = {object_key(item): manifest_form(item) for item in items}
    observed = {object_key(item): Observed(item["metadata"].get("uid", ""), item["metadata"].get("generation", 0))
                for item in items}
    skipped: dict[ObjectKey, tuple[Problem, ...]] = {}
    while True:
        try:
            manifests = load_objects([remaining[key] for key in sorted(remaining)], source, control_cluster=True)
            break
        except ManifestErrors as errors:
            found = [replace(problem, line=0) for problem in errors.errors]
            by_object: dict[ObjectKey, list[Problem]] = {}
            for problem in found:
                by_object.setdefault((problem.kind, problem.namespace, problem.name), []).append(problem)
            if strict or not set(by_object) <= set(remaining):
                raise ManifestErrors(found, [replace(problem, line=0) for problem in errors.warnings]) from None
            for key, problems in by_object.items():
                skipped[key] = tuple(problems)
                del remaining[key]
    warnings = [replace(problem, line=0) for problem in manifests.warnings]
    warnings += [replace(problem, severity=Severity.WARNING) for key in sorted(skipped) for problem in skipped[key]]
    warnings += [_skipped(key, source) for key in sorted(skipped)]
    return Served(replace(manifests, warnings=tuple(sorted(warnings))), observed, skipped)


def _skipped(key: ObjectKey, source: str) -> Problem:
    kind, namespace, name = key
    return Problem(source, 0, kind, namespace, name, message=f"skipped: the rest of the fleet converges without this "
                   f"{kind} until it is fixed (stack config modelplane:strict makes this an error)",
                   code="skipped", severity=Severity.WARNING)
