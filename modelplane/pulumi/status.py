"""Status write-back in control-cluster mode: a dynamic resource that patches the objects' status subresource.

One `FleetStatus` per fleet. Its inputs are `kubeconfig` (secret, and kept secret in its outputs;
empty means in-cluster) and `objects`, what `compose.status_documents.statuses` says each object reports
(`{"Kind/namespace/name": {"uid": ..., "status": {...}}}`). The engine calls create and update only
on `pulumi up`, never in a preview, so a preview writes nothing. Then:
- create patches every object, update every object whose entry changed, each by replacing the
  status subresource (JSON patch `add /status`); a condition keeps the `lastTransitionTime` the
  object already shows when its status did not change, and gets the current time when it did;
- an object deleted, or deleted and created again (another uid), since the program read it is
  left alone: the next run reads it anew;
- `read` (what `pulumi refresh` and the operator's `refresh: true` call) reads the statuses back,
  so one cleared or changed by hand differs from the state and is written again by the next `up`;
- `diff` never replaces; `delete` writes nothing (the statuses stay as last written).
`write_back` registers it after the workloads it reports on.

The provider is a stateless class of this importable module, like the placement's: the dynamic
provider process imports modelplane (and the `kubernetes` client) from the program's virtualenv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

import pulumi
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from modelplane.api import Manifests
from modelplane.api.crds import GROUP, VERSION, served_kind
from modelplane.api.slices import Published
from modelplane.compose.status_documents import statuses
from modelplane.pulumi.control_cluster import ControlCluster, connect
from modelplane.pulumi.placement import from_wire
from modelplane.scheduling import Placement

STATUS_ID = "modelplane-status"
TRANSITION = "lastTransitionTime"


def parse_key(key: str) -> tuple[str, str, str]:
    """`Kind/namespace/name` (or `Kind/name`) -> (kind, namespace, name)."""
    kind, _, rest = key.partition("/")
    namespace, _, name = rest.rpartition("/")
    return kind, namespace, name


def without_times(status: Mapping[str, Any]) -> dict[str, Any]:
    """A status as the program computes it: conditions without `lastTransitionTime`."""
    if "conditions" not in status:
        return dict(status)
    return {**status, "conditions": [{k: v for k, v in c.items() if k != TRANSITION} for c in status["conditions"]]}


def with_times(status: Mapping[str, Any], current: Mapping[str, Any], now: str) -> dict[str, Any]:
    """`status` with each condition's `lastTransitionTime`: kept from `current` when the condition's
    status is unchanged, else `now`."""
    if "conditions" not in status:
        return dict(status)
    before = {c.get("type"): c for c in current.get("conditions", ())}
    conditions = []
    for condition in status["conditions"]:
        previous = before.get(condition["type"], {})
        kept = previous.get(TRANSITION) if previous.get("status") == condition["status"] else None
        conditions.append({**condition, TRANSITION: kept or now})
    return {**status, "conditions": conditions}


class _Objects:
    """The status subresource of the control cluster's objects, through the `kubernetes` client."""

    def __init__(self, kubeconfig: str):
        self.custom = client.CustomObjectsApi(connect(kubeconfig or None))

    def get(self, key: str) -> dict[str, Any] | None:
        kind, namespace, name = parse_key(key)
        plural = served_kind(kind).plural
        try:
            if namespace:
                return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
            return self.custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def replace_status(self, key: str, status: dict[str, Any]) -> None:
        kind, namespace, name = parse_key(key)
        plural = served_kind(kind).plural
        patch = [{"op": "add", "path": "/status", "value": status}]
        try:
            if namespace:
                self.custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, plural, name, patch,
                                                                  _content_type="application/json-patch+json")
            else:
                self.custom.patch_cluster_custom_object_status(GROUP, VERSION, plural, name, patch,
                                                               _content_type="application/json-patch+json")
        except ApiException as error:
            if error.status != 404:  # deleted since it was read
                raise


def write(objects: _Objects, entries: Mapping[str, Any], unchanged: Mapping[str, Any]) -> None:
    """Patch every entry that differs from `unchanged` (the previous state)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for key, entry in sorted(entries.items()):
        if from_wire(unchanged.get(key)) == entry:
            continue
        current = objects.get(key)
        if current is None or (entry["uid"] and current["metadata"].get("uid") != entry["uid"]):
            continue
        objects.replace_status(key, with_times(entry["status"], current.get("status") or {}, now))


class StatusProvider(ResourceProvider):
    """Writes in create/update (never in preview); reads back in read; never replaces; deletes nothing."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in ("kubeconfig", "objects") if from_wire(olds.get(key)) != from_wire(news.get(key))]
        return DiffResult(changes=bool(changed), replaces=[], stables=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        entries = from_wire(props["objects"])
        write(_Objects(props["kubeconfig"]), entries, {})
        return CreateResult(STATUS_ID, {"kubeconfig": props["kubeconfig"], "objects": entries})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        entries = from_wire(news["objects"])
        write(_Objects(news["kubeconfig"]), entries, from_wire(olds.get("objects") or {}))
        return UpdateResult({"kubeconfig": news["kubeconfig"], "objects": entries})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        objects = _Objects(props.get("kubeconfig", ""))
        found: dict[str, Any] = {}
        for key in sorted(from_wire(props.get("objects") or {})):
            current = objects.get(key)
            if current is not None:
                found[key] = {"uid": current["metadata"].get("uid", ""),
                              "status": without_times(current.get("status") or {})}
        return ReadResult(id_, {"kubeconfig": props.get("kubeconfig", ""), "objects": found})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to delete: the statuses stay as last written."""


class FleetStatusArgs(TypedDict):
    kubeconfig: pulumi.Input[str]
    """The control cluster's kubeconfig (made secret); empty: in-cluster."""
    objects: pulumi.Input[dict[str, Any]]
    """`compose.status_documents.statuses(...)`: per object key, its uid and status."""


class FleetStatus(Resource, module="modelplane", name="Status"):
    """The status of every object of the fleet on the control cluster (`compose.status_documents`)."""

    objects: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: FleetStatusArgs, opts: pulumi.ResourceOptions | None = None):
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(StatusProvider(), name, {"kubeconfig": pulumi.Output.secret(args["kubeconfig"]),
                                                  "objects": args["objects"]},
                         pulumi.ResourceOptions.merge(opts, secret))


def write_back(name: str, control: ControlCluster, manifests: Manifests, placement: Placement,
               urls: pulumi.Output[dict[str, str]], gateway_address: pulumi.Output[str],
               after: Sequence[pulumi.Resource], parent: pulumi.Resource,
               capacity: pulumi.Output[dict[str, Any]] | None = None,
               published: Mapping[str, Published | str] | None = None) -> FleetStatus:
    """The fleet's `FleetStatus`, registered after `after` (the workloads whose state it reports);
    `capacity`: the placement's observed-capacity report, when clusters are observed; `published`: what
    each observed cluster publishes, for its DevicesMatchClasses condition."""
    served = control.served
    objects = pulumi.Output.all(urls, gateway_address, capacity).apply(
        lambda resolved: statuses(manifests, placement, served.observed, served.skipped, resolved[0], resolved[1],
                                  capacity=from_wire(resolved[2]), refused=served.refused,
                                  held=served.held, published=published))
    return FleetStatus(name, {"kubeconfig": control.kubeconfig or "", "objects": objects},
                       pulumi.ResourceOptions(parent=parent, depends_on=list(after)))
