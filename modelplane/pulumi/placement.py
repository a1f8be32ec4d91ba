"""The fleet's placement as a Pulumi dynamic resource: the previous placement lives in Pulumi state.

DESIGN section 3, exactly:
- One `FleetPlacement` per fleet. Its inputs are plain data from manifests and config
  (`{"objects": <the JSON text of dump_objects(manifests)>, "strict": bool}`), never cloud Outputs,
  never secrets, so they are known at preview. `objects` is one string rather than a list of objects:
  the SDK serializes, and the engine carries and diffs, one value instead of one per field of every
  manifest (at 5,000 deployments that difference is minutes of a nothing-changed preview).
- `check(olds, news)` re-validates the objects (`load_objects`; each `Problem` becomes a
  `CheckFailure(property=field path, reason=message)`), runs `place(fleet, workloads,
  previous=olds' placement)` and returns the inputs with `objects` replaced by `objectsDigest`
  (`objects_digest`: the SHA-256 of their canonical JSON) and `placement` (the document as one JSON
  text, `document_text`, for the same reason as `objects`: at 5,000 replicas it is 130,000 values as
  data), its `deployments` outline and the `manifests` digests added. So the state keeps no copy of any manifest: the digest is all the
  next check() needs to tell unchanged inputs (a state written before the digest existed holds the
  objects themselves, and their digest is computed from them). The engine returns a check()ed
  resource's inputs as its outputs during preview, so the placement is known there too.
- `create`/`update` echo the checked inputs but `objectsDigest` (`OUTPUTS`); the `manifests`
  digests stand for the objects in the outputs and in `diff`. `diff` never asks for a replacement (a replacement would re-run check
  without olds and lose every pin); `delete` is a no-op.
- What `pulumi preview --diff` shows (docs/pulumi.md, "Reviewing a change"): `deployments`
  (`modelplane.scheduling.diff.outline`) names the replicas created, removed or re-placed per
  deployment, and `manifests` (`digests`) the objects an edit touches; `objects` and `placement` are
  registered with `hide_diffs` and show as one `(hidden)` line each. The Python dynamic provider
  cannot return a detailed diff (its `DiffResult` has changes, replaces, stables and
  delete_before_replace only), and without one the engine prints every property of an updated
  resource, unchanged ones included. So `diff` answers "no changes" itself and otherwise "unknown",
  on which the engine diffs the old and new inputs itself and prints only the changed paths. When
  every changed path is hidden the engine prints all the old inputs instead; a change of `objects`
  always changes a digest, so that only happens when the placement document alone changes.
- Strict mode turns a short deployment into a check failure (an error in preview and up).
- The state is checked on every run, never trusted. When the inputs equal the olds' inputs, the olds'
  document is verified against the current fleet and rules (`scheduling.verify`: pools exist, the
  ledger holds under the packing rule, selectors, caches and taints still allow each replica, the
  recorded costs are the current spec's) and must have been written by this planner
  (`PLANNER_VERSION`, recorded in the document as `planner`). If it holds, check() returns it as
  it is without planning (`place` is pure and re-planning its own output is a fixed point, so
  planning again would give the same document): every preview of an unchanged stack takes that
  path. If it does not, it is planned again with itself as previous, so every replica that holds
  stays, and `corrections` says which replica or deployment was wrong and why (the program warns
  with it; `--diff` shows it and the replicas that moved).

The provider is a class of this importable module and holds no state, so dill serializes it by
reference (`__provider` names `modelplane.pulumi.placement.PlacementProvider`, no code): the
dynamic-provider process imports modelplane, which must be installed in the project's virtualenv.

Numbers cross the engine as protobuf doubles, so `from_wire` reads integral doubles back as ints;
the modelplane API has no float fields, so this loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)
from pulumi.output import contains_unknowns
from pulumi.runtime.rpc import UNKNOWN

from modelplane.api import ManifestErrors, Manifests, Problem, dump_objects, load_objects
from modelplane.api.served import object_key
from modelplane.pulumi.collector import collector_paused
from modelplane.scheduling import DeploymentStatus, Placement, StateError, place
from modelplane.scheduling.diff import outline
from modelplane.scheduling.observed import moves, observations_from_json, observe, report, stranded
from modelplane.scheduling.placement import PLANNER_VERSION
from modelplane.scheduling.verify import verify

PLACEMENT_ID = "modelplane-placement"
INPUTS = ("objects", "strict", "observed")
"""The resource's inputs (`observed`: what each workload cluster reported, control-cluster mode only;
`scheduling.observed.observations_to_json`); check() replaces `objects` by `objectsDigest` and adds
`placement`, `outages`, `capacity`, `deployments`, `manifests` and `corrections`."""
KEPT = ("objectsDigest", "strict", "observed")
"""The inputs as check() returns them (and the state keeps them): the objects only as their digest."""
SHOWN = ("deployments", "manifests", "corrections")
"""Added by check() for `pulumi preview --diff` to show (see the module docstring)."""
OBSERVED = ("outages", "capacity", "stranded")
"""Added by check() when clusters are observed: the outage clock, kept in state so it survives runs,
the capacity report (`scheduling.observed.report`) and the stranded replicas (`scheduling.observed.stranded`,
as a placement document holding only them), whose objects stay registered on their unreachable cluster."""
STATE = (*KEPT, "placement", *OBSERVED, *SHOWN)
OUTPUTS = tuple(key for key in STATE if key != "objectsDigest")
"""What create/update return (see the module docstring) and what `diff` compares, old outputs to checked inputs."""
HIDDEN = ("objects", "objectsDigest", "placement")
"""Left out of what `pulumi preview --diff` prints (`hide_diffs`): `deployments` and `manifests` say it short."""


class PlacementUnknownError(Exception):
    """The placement Output is unknown: registering workloads from it would preview deletions."""


def from_wire(value: Any) -> Any:
    """Plain data as it came through the engine, with integral doubles read back as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: from_wire(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [from_wire(item) for item in value]
    return value


def json_text(value: Any) -> str:
    """`value` as compact JSON text: one property or output value for the engine to carry and diff,
    where the same data would be one value per field (see the module docstring)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def read_json_text(value: Any, what: str) -> Any:
    """A `json_text` value parsed; a value that is not text is the data itself, as a state or stack of an
    earlier version held it (read through `from_wire`). A text that does not parse is a `StateError`
    naming `what`."""
    if not isinstance(value, str):
        return from_wire(value)
    try:
        return json.loads(value)
    except ValueError as error:
        raise StateError([f"({what}): not JSON text ({error})"]) from None


def check_failure(problem: Problem) -> CheckFailure:
    """A manifest problem as the protocol's own "path + reason" error."""
    where = f"objects[{problem.line - 1}]" if problem.line else "objects"
    reason = f"{problem.subject}: {problem.message}" if problem.subject else problem.message
    return CheckFailure(f"{where}.{problem.path}" if problem.path else where, reason)


class PlacementProvider(ResourceProvider):
    """Runs the scheduler in check(); echoes in create/update; never replaces; deletes nothing."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = {key: news[key] for key in INPUTS if key in news}
        if _unknown(inputs.get("objects")) or _unknown(inputs.get("strict")):
            return CheckResult(inputs, [])  # the placement stays unknown; the program refuses to go on
        objects = parsed_objects(inputs.get("objects"))
        if objects is None or not isinstance(inputs.get("strict", False), bool):
            return CheckResult(inputs, [CheckFailure("objects", "objects must be the JSON text of a list of manifest "
                                                                "objects and strict a bool")])
        kept = {"objectsDigest": objects_digest(objects), **{key: inputs[key] for key in KEPT if key in inputs}}
        with collector_paused():  # the entry of the dynamic-provider process (`pulumi.collector`)
            return self._place(olds, kept, objects)

    def _place(self, olds: dict[str, Any], inputs: dict[str, Any], objects: list[Any]) -> CheckResult:
        try:
            observations = observations_from_json(from_wire(inputs.get("observed") or {}))
        except ValueError as error:
            return CheckResult(inputs, [CheckFailure("observed", str(error))])
        clock = {str(k): int(v) for k, v in (from_wire(olds.get("outages")) or {}).items()}
        try:
            # Where the gateway runs is not an input of the placement, and the program checked it.
            manifests = load_objects(objects, source="objects", control_cluster=True)
        except ManifestErrors as errors:
            return CheckResult(inputs, [check_failure(problem) for problem in errors.errors])
        previous: Placement | None = None
        document = olds.get("placement")
        if document:
            try:
                previous = Placement.from_json(read_document(document))
            except StateError as error:
                return CheckResult(inputs, [CheckFailure("placement", (
                    f"the previous placement in the stack's state cannot be read ({error}); "
                    "fix it with `pulumi stack export`/`import` rather than losing every pin"))])
        corrections: list[str] = []
        # While a cluster is down, time alone can move replicas: plan every run, never the unchanged path.
        try:
            kept = Placement.from_json(from_wire(olds["stranded"])).replicas if olds.get("stranded") else ()
        except StateError as error:
            return CheckResult(inputs, [CheckFailure("stranded", f"the stranded replicas in the stack's state cannot "
                                                                 f"be read ({error})")])
        settled = not clock and not kept and all(seen.reachable for seen in observations.values())
        if previous is not None and settled and _same_inputs(olds, inputs):
            if previous.planner != PLANNER_VERSION:
                corrections.append(f"the placement was written by planner version {previous.planner or 'unknown'}, "
                                   f"this is version {PLANNER_VERSION}: planned again, every replica that holds "
                                   "stays")
            corrections += [str(violation) for violation in verify(manifests.fleet, manifests.workloads, previous)]
            if not corrections:
                return CheckResult(_unchanged(olds, inputs, objects, document, previous),
                                   _strict(inputs, previous.deployments))
        if not observations:
            placement = place(manifests.fleet, manifests.workloads, previous).model_copy(
                update={"planner": PLANNER_VERSION})
            return CheckResult({**inputs, "placement": document_text(placement), **_shown(objects, placement, corrections)},
                               _strict(inputs, placement.deployments))
        seen = observe(manifests.fleet, observations, clock, int(time.time()))  # the provider's clock, never the core's
        placement = place(seen.fleet, manifests.workloads, previous).model_copy(update={"planner": PLANNER_VERSION})
        carried = (from_wire(olds.get("capacity")) or {}).get("moves") or []
        observed = {"outages": dict(seen.outages), "capacity": report(seen, moves(previous, placement, seen), carried),
                    "stranded": Placement(replicas=stranded(kept, previous, placement, observations)).to_json()}
        return CheckResult({**inputs, "placement": document_text(placement), **observed,
                            **_shown(objects, placement, corrections)},
                           _strict(inputs, placement.deployments))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        """`changes=False` when every property of the state is as before; otherwise `changes=None`
        ("unknown"): the engine then diffs the old and new inputs itself and keeps that as the step's
        detailed diff, which is what `--diff` prints (see the module docstring). Never a replacement."""
        changed = any(from_wire(olds.get(key)) != from_wire(news.get(key)) for key in OUTPUTS)
        return DiffResult(changes=None if changed else False, replaces=[], stables=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(PLACEMENT_ID, _echo(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_echo(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to delete: the placement exists only in the stack's state."""


def _same_inputs(olds: dict[str, Any], inputs: dict[str, Any]) -> bool:
    """Both as they came through the engine: a double equals the int it stands for, so no `from_wire`.
    A state written before `objectsDigest` existed holds the objects themselves."""
    before = olds.get("objectsDigest")
    if before is None and isinstance(olds.get("objects"), list):
        before = objects_digest(from_wire(olds["objects"]))
    return before == inputs["objectsDigest"] and all(olds.get(key) == inputs.get(key) for key in KEPT[1:])


def objects_text(objects: list[dict[str, Any]]) -> str:
    """The `objects` input: the objects' JSON text, in their order (a problem names its index)."""
    return json_text(objects)


def objects_digest(objects: list[Any]) -> str:
    """The SHA-256 of the objects' canonical JSON (keys sorted): what the state keeps of them."""
    canonical = json.dumps(objects, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def parsed_objects(text: Any) -> list[Any] | None:
    """The objects of an `objects_text` value, or None when it is not the JSON text of a list."""
    if not isinstance(text, str):
        return None
    try:
        objects = json.loads(text)
    except ValueError:
        return None
    return objects if isinstance(objects, list) else None


def _unchanged(olds: dict[str, Any], inputs: dict[str, Any], objects: list[dict[str, Any]],
               document: Any, previous: Placement) -> dict[str, Any]:
    """The checked inputs when the previous placement holds for these same inputs: the olds' document
    as it is (as its text when a state written before the text held it as data), its `deployments` and `manifests` (they follow from the placement and the objects alone;
    a state written before they existed gets them computed), no corrections, and, when clusters are
    observed, the olds' capacity report (no outage is running, or this path is not taken)."""
    shown = {key: olds[key] for key in ("deployments", "manifests") if isinstance(olds.get(key), dict)}
    if len(shown) < 2:
        shown = _shown(objects, previous, [])
    observed = {key: olds.get(key) for key in OBSERVED} if inputs.get("observed") else {}
    text = document if isinstance(document, str) else document_text(previous)
    return {**inputs, "placement": text, **observed, **shown, "corrections": []}


def document_text(placement: Placement) -> str:
    """The `placement` property: the document (`Placement.to_json()`) as compact JSON text."""
    return json_text(placement.to_json())


def read_document(value: Any) -> Any:
    """The placement document of a `placement` property (`read_json_text`: a state written before the
    text holds the document itself)."""
    return read_json_text(value, "document")


def _shown(objects: list[dict[str, Any]], placement: Placement, corrections: list[str]) -> dict[str, Any]:
    """The properties `--diff` shows: the placement's outline, the objects' digests and what was wrong
    with the previous placement under unchanged inputs."""
    return {"deployments": outline(placement), "manifests": digests(objects), "corrections": corrections}


def digests(objects: list[dict[str, Any]]) -> dict[str, str]:
    """`Kind namespace/name` (`Kind name` without a namespace) -> the first 12 hex digits of the
    SHA-256 of the object's canonical JSON: a short value that changes when anything in it does."""
    found: dict[str, str] = {}
    for obj in objects:
        kind, namespace, name = object_key(obj)
        canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        found[f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"] = \
            hashlib.sha256(canonical.encode()).hexdigest()[:12]
    return found


def _strict(inputs: dict[str, Any], statuses: Mapping[str, DeploymentStatus]) -> list[CheckFailure]:
    """In strict mode, a failure per short deployment."""
    if not inputs.get("strict"):
        return []
    return [CheckFailure(f"placement.deployments[{key!r}]",
                         f"strict mode: {key} is short ({status.scheduled}/{status.desired} replicas "
                         f"scheduled): {'; '.join(status.reasons)}")
            for key, status in statuses.items() if status.short]


def _echo(props: Mapping[str, Any]) -> dict[str, Any]:
    return {key: props[key] for key in OUTPUTS if key in props}


def _unknown(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(_unknown(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_unknown(item) for item in value)
    return False


class FleetPlacementArgs(TypedDict):
    manifests: Manifests
    """The validated manifests (`modelplane.api.loader`); only their plain data enters the state."""
    strict: bool
    """True: a deployment with fewer replicas scheduled than desired fails check() (an error).
    False (the stack default): it is reported with `pulumi.log.warn` and the rest converges."""
    observed: NotRequired[dict[str, Any]]
    """Control-cluster mode: what each workload cluster reported (`observations_to_json`); the placement
    plans against it (`scheduling.observed`). Absent: every cluster as declared."""


class FleetPlacement(Resource, module="modelplane", name="Placement"):
    """Where every replica of the fleet runs, computed by `check()` and kept in state."""

    strict: pulumi.Output[bool]
    placement: pulumi.Output[str]
    """The placement document (`modelplane.scheduling.Placement.to_json()`) as JSON text (`document_text`),
    known at preview."""
    deployments: pulumi.Output[dict[str, Any]]
    """The placement outlined per deployment (`modelplane.scheduling.diff.outline`), for `--diff`."""
    manifests: pulumi.Output[dict[str, str]]
    """`Kind namespace/name` -> a digest of the object (`digests`), for `--diff`."""
    capacity: pulumi.Output[dict[str, Any]]
    """With `observed` only: `scheduling.observed.report`, what the status writer shows."""
    stranded: pulumi.Output[dict[str, Any]]
    """With `observed` only: a placement document of the stranded replicas (`scheduling.observed.stranded`)."""
    corrections: pulumi.Output[list[str]]
    """What was wrong with the previous placement although the inputs had not changed (a state edited by
    hand, or written by another planner version), each a replica or deployment and why; empty when it held."""

    def __init__(self, name: str, args: FleetPlacementArgs, opts: pulumi.ResourceOptions | None = None):
        props = {"objects": objects_text(dump_objects(args["manifests"])), "strict": args["strict"],
                 "placement": None, "deployments": None, "manifests": None, "corrections": None}
        if args.get("observed"):
            props.update(observed=args["observed"], outages=None, capacity=None, stranded=None)
        hidden = pulumi.ResourceOptions(hide_diffs=list(HIDDEN))
        super().__init__(PlacementProvider(), name, props, pulumi.ResourceOptions.merge(opts, hidden))


UNKNOWN_MESSAGE = (
    "the fleet placement is unknown at this point, so the workloads cannot be registered from it; "
    "registering nothing would preview deleting every workload. The placement's inputs must be plain "
    "data from manifests and config (never cloud outputs or secrets): check that nothing computed by a "
    "cloud resource flows into FleetPlacement's inputs.")


def known_placement(placement: pulumi.Output[Any]) -> pulumi.Output[Placement]:
    """The placement document, or an error that says why when the Output is unknown (DESIGN section 3)."""

    def read(value: Any) -> Placement:
        if value is None or contains_unknowns(value):
            raise PlacementUnknownError(UNKNOWN_MESSAGE)
        return Placement.from_json(read_document(value))

    return placement.apply(read, run_with_unknowns=True)
