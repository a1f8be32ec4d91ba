"""Objects as an API server serves them (control-cluster mode) -> validated `Manifests`.

`load_served(items, source, accepted=...)` takes the items of the modelplane.ai lists, as plain JSON,
and validates them with the same loader as files. Of each object it keeps what a manifest holds
(apiVersion, kind, metadata name, namespace, labels, annotations, and spec): never status,
server-managed metadata, or kubectl's last-applied annotation (a copy of the whole object, which
would make every apply look like a change of the fleet's inputs).

Unlike files, one invalid object does not stop the fleet (one team's typo must not block the
others), and it never removes what the object owns either. An object whose current version the
loader refuses is **refused**; it, and every object that refers to it (a cluster's pool naming a
refused class, a deployment naming a refused cache, the gateway on a held cluster: its
**dependents**, transitively), are **held**: planned with their last accepted version
(`accepted.Accepted`, what the previous run planned with), so nothing they own changes. A refused
object or dependent with no accepted version was never planned, owns nothing, and is **skipped**.
The run fails instead (`ManifestErrors`, so nothing changes) when holding is impossible: an accepted
version the loader refuses in turn (it names an object since deleted), or a refusal while the
stack's record is unusable (`Accepted.known` False: what the object owns is unknown). An object
gone from the source is gone: it is neither held nor kept. Every problem becomes a warning, and
`Served` says which objects are refused, held (and by what) and skipped; `accepted` is the next
run's record. With `strict=True` the problems are errors, as they are for files.

Problems name the object (`KIND NAMESPACE/NAME`) and the `source` instead of a file and line. The
objects come from the control cluster, so an InferenceGateway without `spec.cluster` runs there
(`load_objects(..., control_cluster=True)`). Pure: data in, data out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from modelplane.api.accepted import NOTHING, Accepted
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
    refused: dict[ObjectKey, tuple[Problem, ...]] = field(default_factory=dict)
    """The objects whose current version the loader refused, with why (each is held or skipped)."""
    held: dict[ObjectKey, tuple[ObjectKey, ...]] = field(default_factory=dict)
    """The objects planned with their last accepted version -> the refused objects holding them (an
    object refused itself is held by itself)."""
    dependents: dict[ObjectKey, tuple[ObjectKey, ...]] = field(default_factory=dict)
    """The objects held or skipped because they refer to refused ones (not refused themselves) -> those."""
    accepted: tuple[dict[str, Any], ...] = ()
    """The manifest form of every object planned with: what `accepted.record` keeps for the next run."""


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


def load_served(items: Iterable[Mapping[str, Any]], source: str, *, strict: bool = False,
                accepted: Accepted = NOTHING) -> Served:
    items = list(items)
    current = {object_key(item): manifest_form(item) for item in items}
    observed = {object_key(item): Observed(item["metadata"].get("uid", ""), item["metadata"].get("generation", 0))
                for item in items}
    refused: dict[ObjectKey, tuple[Problem, ...]] = {}
    holders: dict[ObjectKey, set[ObjectKey]] = {}
    """Every refused object and dependent -> the refused objects it waits for."""
    while True:
        chosen = {key: accepted.objects[key] if key in holders else form for key, form in current.items()
                  if key not in holders or key in accepted.objects}
        try:
            manifests = load_objects([chosen[key] for key in sorted(chosen)], source, control_cluster=True)
            break
        except ManifestErrors as errors:
            found = [replace(problem, line=0) for problem in errors.errors]
            by_object: dict[ObjectKey, list[Problem]] = {}
            for problem in found:
                by_object.setdefault((problem.kind, problem.namespace, problem.name), []).append(problem)
            if strict or not set(by_object) <= set(chosen):
                raise ManifestErrors(found, [replace(problem, line=0) for problem in errors.warnings]) from None
            unholdable = [_unholdable(problem) for key in sorted(by_object) if key in holders
                          for problem in by_object[key]]
            if unholdable:
                raise ManifestErrors(unholdable + [p for key in sorted(refused) for p in refused[key]]) from None
            for key, problems in by_object.items():
                refused[key] = tuple(problems)
                holders[key] = {key}
            _hold_dependents(current, holders)
            if not accepted.known and any(key in holders for key in current):
                raise ManifestErrors([_unknown(key, source, accepted.why) for key in sorted(refused)]
                                     + [p for key in sorted(refused) for p in refused[key]]) from None
    held = {key: tuple(sorted(by)) for key, by in sorted(holders.items()) if key in chosen}
    skipped = {key: refused.get(key) or _waiting(key, holders[key], current[key], source)
               for key in sorted(holders) if key not in chosen}
    warnings = [replace(problem, line=0) for problem in manifests.warnings]
    warnings += [replace(problem, severity=Severity.WARNING) for key in sorted(refused) for problem in refused[key]]
    warnings += [replace(problem, severity=Severity.WARNING) for key in sorted(skipped) if key not in refused
                 for problem in skipped[key]]
    warnings += [_skipped(key, source) for key in sorted(skipped)]
    warnings += [_held(key, by, source) for key, by in held.items()]
    dependents = {key: tuple(sorted(by - {key})) for key, by in sorted(holders.items()) if key not in refused}
    return Served(replace(manifests, warnings=tuple(sorted(warnings))), observed, skipped, refused, held, dependents,
                  tuple(chosen[key] for key in sorted(chosen)))


def refusals(served: Served) -> dict[str, dict[str, Any]]:
    """What the run did about each refused object (`KIND NAMESPACE/NAME`): the loader's problems, what it
    planned with, and which objects referring to it were held or skipped (the stack output `refused`)."""
    found: dict[str, dict[str, Any]] = {}
    for key, problems in sorted(served.refused.items()):
        waiting = sorted(other for other, by in served.dependents.items() if key in by)
        found[_subject(key)] = {
            "problems": [f"{problem.path}: {problem.message}" if problem.path else problem.message for problem in problems],
            "plannedWith": "its last accepted version" if key in served.held else "nothing: never accepted, skipped",
            "held": [_subject(other) for other in waiting if other in served.held],
            "skipped": [_subject(other) for other in waiting if other in served.skipped]}
    return found


def references(form: Mapping[str, Any]) -> dict[ObjectKey, str]:
    """The objects a manifest form names, each with the field path that names it: a pool's class, a
    deployment's cache, a gateway's cluster (the references the loader checks). Reads the form as
    written, valid or not: whatever is not a name is not a reference."""
    spec = form.get("spec") if isinstance(form.get("spec"), dict) else {}
    kind, namespace = form.get("kind"), (form.get("metadata") or {}).get("namespace", "")
    found: dict[ObjectKey, str] = {}
    if kind == "InferenceCluster" and isinstance(spec.get("nodePools"), list):
        for index, pool in enumerate(spec["nodePools"]):
            if isinstance(pool, dict) and isinstance(pool.get("className"), str):
                found.setdefault(("InferenceClass", "", pool["className"]), f"spec.nodePools[{index}].className")
    elif kind == "ModelDeployment" and isinstance(spec.get("modelCacheRef"), dict):
        name = spec["modelCacheRef"].get("name")
        if isinstance(name, str):
            found[("ModelCache", namespace, name)] = "spec.modelCacheRef.name"
    elif kind == "InferenceGateway" and isinstance(spec.get("cluster"), str):
        found[("InferenceCluster", "", spec["cluster"])] = "spec.cluster"
    return found


def _hold_dependents(current: Mapping[ObjectKey, Mapping[str, Any]], holders: dict[ObjectKey, set[ObjectKey]]) -> None:
    """Add every object that refers to a held one (transitively), waiting for what that one waits for."""
    changed = True
    while changed:
        changed = False
        for key in sorted(current):
            waits = set().union(*(holders[ref] for ref in references(current[key]) if ref in holders and ref != key))
            if not waits <= holders.get(key, set()):
                holders[key] = holders.get(key, set()) | waits
                changed = True




def _skipped(key: ObjectKey, source: str) -> Problem:
    kind, namespace, name = key
    return Problem(source, 0, kind, namespace, name, message=f"skipped: the rest of the fleet converges without this "
                   f"{kind} until it is fixed (stack config modelplane:strict makes this an error)",
                   code="skipped", severity=Severity.WARNING)


def _held(key: ObjectKey, by: tuple[ObjectKey, ...], source: str) -> Problem:
    kind, namespace, name = key
    why = "its current version is refused" if by == (key,) else "it refers to " + ", ".join(
        _subject(holder) for holder in by if holder != key) + ", which is refused"
    return Problem(source, 0, kind, namespace, name, message=f"held: planned with its last accepted version, so "
                   f"nothing it owns changes, because {why}; fix that to apply its changes", code="held",
                   severity=Severity.WARNING)


def _waiting(key: ObjectKey, by: set[ObjectKey], form: Mapping[str, Any], source: str) -> tuple[Problem, ...]:
    kind, namespace, name = key
    paths = references(form)
    return tuple(Problem(source, 0, kind, namespace, name, path=paths.get(holder, ""),
                         message=f"{_subject(holder)} is refused", code="reference", severity=Severity.WARNING)
                 for holder in sorted(by))


def _unholdable(problem: Problem) -> Problem:
    return replace(problem, message=f"its last accepted version is refused too, so the run cannot keep it and stops "
                   f"(nothing changes): {problem.message}", severity=Severity.ERROR)


def _unknown(key: ObjectKey, source: str, why: str) -> Problem:
    kind, namespace, name = key
    return Problem(source, 0, kind, namespace, name, message=f"refused, and the run cannot keep what it owns because "
                   f"{why}; the run stops (nothing changes) until the object is fixed", code="refused")


def _subject(key: ObjectKey) -> str:
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
