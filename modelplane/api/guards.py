"""Checks on what a manifest writes that no field's schema states: what a hostile or careless author
must never be able to smuggle into a render.

`guard_problems(data, origin, key)` walks one document's raw data (keys and values) and returns an
error for
- a string holding one of the placeholders compose leaves for the Pulumi layer (`SECRET_PREFIX`,
  `ADDRESS_SUFFIX`): the Pulumi layer replaces them with secret values and gateway addresses, so a
  user string holding one would ask it to paste another team's secret into their own object;
- a document larger than `OBJECT_LIMIT` as JSON: the API server (etcd) stores no bigger object, and
  the objects rendered from it copy most of it;
- a namespaced object in `CONTROL_NAMESPACE`, which holds the fleet's own credentials (the
  kubeconfigs of Existing clusters, the operator's Stack): a workload there could read them.
Pure; the placeholders are defined here (the lowest layer) and compose writes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from modelplane.api.manifests import Loc, ObjectKey, Origin
from modelplane.api.problems import Problem

SECRET_PREFIX = "modelplane-secret:"
"""Starts every secret placeholder compose writes (`compose.cache.secret_placeholder`)."""
ADDRESS_SUFFIX = ".gateway-address.modelplane.invalid"
"""Ends every gateway-address placeholder compose writes (`compose.routing.address_placeholder`)."""
OBJECT_LIMIT = 1_572_864
"""etcd's default request limit (1.5 MiB), the most one Kubernetes object may hold."""
CONTROL_NAMESPACE = "modelplane-system"
"""The namespace of the control plane and of the Secrets holding the fleet's credentials."""


def guard_problems(data: Any, origin: Origin, key: ObjectKey) -> list[Problem]:
    blob = orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS)
    lowered = blob.lower()  # JSON writes the markers' characters as they are: search once, walk only on a hit
    problems = [origin.problem(key, loc, f"holds {marker!r}, which Modelplane reserves for the values it fills in "
                               "itself (secrets, gateway addresses); remove it", "reserved-text")
                for loc, marker in _placeholders(data, ())] if any(
        marker.encode() in lowered for marker in (SECRET_PREFIX, ADDRESS_SUFFIX)) else []
    size = len(blob)
    if size > OBJECT_LIMIT:
        problems.append(origin.problem(key, (), f"is {size:,} bytes as JSON; a Kubernetes object holds at most "
                                       f"{OBJECT_LIMIT:,} (1.5 MiB): split it", "too-large"))
    if key[1] == CONTROL_NAMESPACE:
        problems.append(origin.problem(key, ("metadata", "namespace"), (
            f"namespace {CONTROL_NAMESPACE} is the control plane's (it holds the fleet's credentials); "
            "put the object in your team's namespace"), "reserved-namespace"))
    return problems


def _placeholders(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    if isinstance(value, str):
        lowered = value.lower()
        for marker in (SECRET_PREFIX, ADDRESS_SUFFIX):
            if marker in lowered:
                yield loc, marker
    elif isinstance(value, dict):
        for name, item in value.items():
            child = (*loc, name if isinstance(name, (str, int)) else str(name))
            yield from _placeholders(name, child)
            yield from _placeholders(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _placeholders(item, (*loc, index))
