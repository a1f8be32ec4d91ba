"""Selectors that no device of any published InferenceClass can ever satisfy, as warnings.

`unsatisfiable(manifests) -> list[Finding]`: for every device selector of every ModelDeployment, when
no device of any InferenceClass of the manifests matches it on its own, one warning at the
selector's field that says the likely cause: an attribute or capacity name no device publishes (with
the closest published name: `architecure` -> `architecture`), a `quantity("...")` argument that is
not a Kubernetes quantity (`"40GB"`), or else the reason the selector fails on the closest device
(a comparison no published value passes). Without any InferenceClass (a manifest set of workloads
only) there is nothing to compare against and nothing is reported.

Pure: the same CEL evaluator the scheduler uses (`modelplane.cel`), no I/O. It only warns: a
selector that matches some device may still leave a deployment short (capacity, labels, taints),
which `plan` and `explain` report.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from modelplane.api import Manifests, ModelDeployment
from modelplane.cel import Device, SelectorEvaluator
from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.compose.findings import Finding

CODE = "selector-matches-no-device"
READ = re.compile(r'device\.(attributes|capacity)\["([^"]+)"\]\.([A-Za-z_][A-Za-z0-9_]*)')
_QUANTITY = re.compile(r'quantity\("([^"]*)"\)')


def unsatisfiable(manifests: Manifests, evaluator: SelectorEvaluator | None = None) -> list[Finding]:
    """`evaluator`: a plan's, whose evaluations of the same selectors on the same devices are reused."""
    devices = [(c.name, d.name, Device.from_class_device(d.model_dump(by_alias=True, exclude_none=True)))
               for c in manifests.fleet.classes for d in c.spec.devices]
    if not devices:
        return []
    evaluator = evaluator or SelectorEvaluator()
    # Classes repeat devices (one GPU in 1-, 2-, 4- and 8-GPU classes); equal devices match alike.
    distinct = list(dict.fromkeys(device for _, _, device in devices))
    causes: dict[str, str | None] = {}  # per distinct selector (deployments repeat them): None when a device matches
    findings = []
    for deployment in manifests.workloads.deployments:
        for loc, expression in device_selectors(deployment):
            if expression not in causes:
                causes[expression] = _unmatched(expression, devices, distinct, evaluator)
            cause = causes[expression]
            if cause is not None:
                findings.append(Finding(deployment, loc, cause, CODE))
    return findings


def device_selectors(deployment: ModelDeployment) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(field path, CEL expression) of every device selector of the deployment, in order."""
    for e, engine in enumerate(deployment.spec.engines):
        for m, member in enumerate(engine.members):
            if member.node_selector is None:
                continue
            for d, request in enumerate(member.node_selector.devices):
                for s, selector in enumerate(request.selectors):
                    yield ("spec", "engines", e, "members", m, "nodeSelector", "devices", d, "selectors", s,
                           "cel"), selector.cel


def _unmatched(expression: str, devices: list[tuple[str, str, Device]], distinct: list[Device],
               evaluator: SelectorEvaluator) -> str | None:
    """Why no device matches `expression` (`distinct`: the devices without repeats), or None when one does."""
    if any(evaluator.evaluate(expression, device).matched for device in distinct):
        return None
    cls, name, device = devices[0]
    return _cause(expression, devices, f"on InferenceClass {cls}, device {name}: "
                                       f"{evaluator.evaluate(expression, device).reason}")


def _cause(expression: str, devices: list[tuple[str, str, Device]], otherwise: str) -> str:
    """The likely cause: a name no device publishes, a malformed quantity, else `otherwise`."""
    lead = "no device of any InferenceClass satisfies this selector, so no pool can ever run this member"
    published = {(section, domain): names for section, domain, names in _published(devices)}
    for section, domain, name in READ.findall(expression):
        names = published.get((section, domain))
        if names is None:
            domains = sorted({d for s, d in published if s == section})
            return f"{lead}: no device publishes {section} in domain {domain!r}{_closest(domain, domains)}"
        if name not in names:
            return f"{lead}: no device publishes the {'capacity' if section == 'capacity' else 'attribute'} " \
                   f"{domain}/{name}{_closest(name, sorted(names))}"
    for text in _QUANTITY.findall(expression):
        try:
            parse_quantity(text)
        except QuantityError:
            return f"{lead}: {text!r} is not a Kubernetes quantity (binary suffixes Ki Mi Gi Ti, decimal k M G T: " \
                   "'40Gi' or '40G')"
    return f"{lead}: {otherwise}"


def _published(devices: list[tuple[str, str, Device]]) -> Iterator[tuple[str, str, set[str]]]:
    names: dict[tuple[str, str], set[str]] = {}
    for _, _, device in devices:
        for domain, name, _, _ in device.attributes:
            names.setdefault(("attributes", domain), set()).add(name)
        for domain, name, _ in device.capacity:
            names.setdefault(("capacity", domain), set()).add(name)
    for (section, domain), found in sorted(names.items()):
        yield section, domain, found


def _closest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (closest: {close[0]!r})" if close else f" (published: {', '.join(candidates) or 'none'})"
