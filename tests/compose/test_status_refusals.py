"""Every kind's status says whether the run planned with its current spec (`compose.status_documents`): Ready True
(SpecApplied) for an accepted InferenceClass, ModelCache or ModelEndpoint; Ready False for a refused object of any
kind (InvalidSpec, the loader's message with its field path) and for the objects it holds (DependencyRefused,
naming it). The objects are the ones recorded from a real API server (tests/api/test_served.py), edited the way
tests/api/test_refusal_holds.py edits them; every status fits its kind's generated CRD schema (checked on an object
of the kind whose spec the CRD admits).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from modelplane.api.served import load_served
from modelplane.compose.status_documents import status_key, statuses
from modelplane.scheduling import place
from tests.api import crd_schema
from tests.api.test_refusal_holds import CACHE, CLASS, GATEWAY, GKE, accepted_by_a_run, item, valid_items
from tests.api.test_served import recorded_items

Key = tuple[str, str, str]
ENDPOINT = ("ModelEndpoint", "ml-team", "hosted")
WEST = ("InferenceCluster", "", "gke-us-west")
HELD = "; planned with its last accepted spec until it is fixed, so nothing it runs changes"
WAITS = " is refused; this object is planned with its last accepted spec until that is fixed, so nothing it runs changes"
APPLIED = "the last `pulumi up` planned with this spec"


def with_endpoint(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*items, {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelEndpoint",
                     "metadata": {"name": "hosted", "namespace": "ml-team", "generation": 1,
                                  "uid": "0d5b7a52-5d1e-4c34-9a51-1f0b1bd0c0de"},
                     "spec": {"url": "https://api.example.com/v1"}}]


def fixed_cache() -> dict[str, Any]:
    cache = copy.deepcopy(item(recorded_items(), CACHE))
    cache["spec"]["huggingFace"]["repo"] = "Qwen/Qwen3-Coder-30B"
    return cache


def bad_quantity(items: list[dict[str, Any]]) -> None:
    item(items, CLASS)["spec"]["devices"][0]["capacity"] = {"memory": {"value": "80GB"}}  # issue 22's example


def metadata_url(items: list[dict[str, Any]]) -> None:
    item(items, ENDPOINT)["spec"]["url"] = "http://169.254.169.254/latest"


def new_cluster_on_the_bad_class(items: list[dict[str, Any]]) -> None:
    bad_quantity(items)
    west = copy.deepcopy(item(items, GKE))
    west["metadata"]["name"] = "gke-us-west"
    items.append(west)


def nothing(_items: list[dict[str, Any]]) -> None:
    """No edit."""


@dataclass(frozen=True)
class Case:
    name: str
    items: Callable[[], list[dict[str, Any]]]
    edit: Callable[[list[dict[str, Any]]], None]
    key: Key
    status: str
    reason: str
    message: str  # the Ready message: exact, or its start when it ends with "..."


CASES = [
    Case("an accepted class", valid_items, nothing, CLASS, "True", "SpecApplied", APPLIED),
    Case("an accepted endpoint", lambda: with_endpoint(valid_items()), nothing, ENDPOINT, "True", "SpecApplied",
         APPLIED),
    Case("a class edit the loader refuses: held, the message has the field path", valid_items, bad_quantity, CLASS,
         "False", "InvalidSpec", "spec.devices[0].capacity.memory.value: '80GB' is not a Kubernetes quantity ..."),
    Case("the cluster whose pool names that class", valid_items, bad_quantity, GKE, "False", "DependencyRefused",
         f"InferenceClass gke-l4-1x-g2{WAITS}"),
    Case("the gateway on that cluster", valid_items, bad_quantity, GATEWAY, "False", "DependencyRefused",
         f"InferenceClass gke-l4-1x-g2{WAITS}"),
    Case("a new cluster naming the refused class: skipped", valid_items, new_cluster_on_the_bad_class, WEST, "False",
         "DependencyRefused", "spec.nodePools[0].className: InferenceClass gke-l4-1x-g2 is refused"),
    Case("an endpoint edit the loader refuses: held", lambda: with_endpoint(valid_items()), metadata_url, ENDPOINT,
         "False", "InvalidSpec", "spec.url: ..."),
    Case("a cache the loader refused from the start: skipped", recorded_items, nothing, CACHE, "False", "InvalidSpec",
         "spec.huggingFace.repo: 'Qwen Qwen3-Coder-30B' is not a Hugging Face repository id: use 'owner/name' (e.g. "
         "Qwen/Qwen3-8B)"),
]


def written(case: Case) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The statuses of a run after `case.edit`, the run before having planned with the unedited objects, and the
    edited objects."""
    items = case.items()
    accepted = accepted_by_a_run(items)
    edited = copy.deepcopy(items)
    case.edit(edited)
    source = load_served(edited, "control cluster", accepted=accepted)
    placement = place(source.manifests.fleet, source.manifests.workloads)
    found = statuses(source.manifests, placement, source.observed, source.skipped, {}, "203.0.113.7",
                     refused=source.refused, held=source.held)
    valid = [*with_endpoint(valid_items()), fixed_cache()]  # specs the CRD admits, as a refused one may not be
    for key, entry in found.items():
        kind, _, rest = key.partition("/")
        namespace, _, name = rest.rpartition("/")
        obj = next(i for i in valid if i["kind"] == kind)
        with_status = {**{k: obj[k] for k in ("apiVersion", "kind", "spec")},
                       "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                       "status": entry["status"]}
        assert crd_schema.problems(with_status) == [], key
    return found, edited


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_ready_condition_says_whether_the_run_planned_with_the_current_spec(case: Case) -> None:
    found, edited = written(case)
    entry = found[status_key(*case.key)]
    ready = next(c for c in entry["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == (case.status, case.reason)
    if case.message.endswith("..."):
        assert ready["message"].startswith(case.message[:-3]), ready["message"]
    else:
        assert ready["message"] == case.message
    if case.reason == "InvalidSpec" and case.key != CACHE:
        assert ready["message"].endswith(HELD), "accepted before: planned with that version"
    assert ready["observedGeneration"] == item(edited, case.key)["metadata"]["generation"]


def test_a_held_gateway_keeps_its_address_and_a_held_cluster_its_other_conditions() -> None:
    found, _ = written(Case("", valid_items, bad_quantity, GATEWAY, "", "", ""))
    assert found[status_key(*GATEWAY)]["status"]["address"] == "203.0.113.7"
    assert [c["type"] for c in found[status_key(*GKE)]["status"]["conditions"]] == ["Ready"]


def test_an_accepted_cluster_or_gateway_carries_no_ready_condition() -> None:
    found, _ = written(Case("", valid_items, nothing, GATEWAY, "", "", ""))
    assert found[status_key(*GATEWAY)]["status"] == {"address": "203.0.113.7"}
    assert found[status_key(*GKE)]["status"] == {}, "no observed capacity: nothing to say, which clears a refusal"
