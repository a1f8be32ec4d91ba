"""Selectors that read one GPU vendor's domain in a fleet that also has the other vendor's classes.

`cross_vendor(manifests) -> list[Finding]`: NVIDIA's DRA driver publishes its attributes and capacity
under `gpu.nvidia.com`, AMD's under `gpu.amd.com` (ROCm/k8s-gpu-dra-driver docs/driver-attributes.md:
`productName`, `family`, `memory`, `computeUnits`, ...). A selector such as
`device.capacity["gpu.nvidia.com"].memory >= quantity("80Gi")` can never match an AMD device, whose
capacity has no `gpu.nvidia.com` domain, so the other vendor's pools silently drop out of that
member's candidates. One warning per selector and per vendor it cannot reach, when the fleet has
classes of both vendors (with only the other vendor's, the selector matches no device at all and
`selectors.unsatisfiable` says so); none for a request one of whose selectors says which driver it
wants (`device.driver == "..."`): a request's selectors all apply, so that makes the choice explicit.
"""

from __future__ import annotations

import re

from modelplane.api import Manifests
from modelplane.compose.findings import Finding
from modelplane.compose.selectors import READ, device_selectors
from modelplane.compose.stack import AMD_DRIVER, NVIDIA_DRIVER

CODE = "selector-reads-other-vendor"
VENDORS = {NVIDIA_DRIVER: "NVIDIA", AMD_DRIVER: "AMD"}
_NAMES_DRIVER = re.compile(r"device\.driver\s*(==|!=|in\b)")
_REQUEST = len(("spec", "engines", 0, "members", 0, "nodeSelector", "devices", 0))
"""How much of a selector's field path names its device request."""


def cross_vendor(manifests: Manifests) -> list[Finding]:
    classes = {driver: sorted({c.name for c in manifests.fleet.classes for d in c.spec.devices if d.driver == driver})
               for driver in VENDORS}
    findings = []
    for deployment in manifests.workloads.deployments:
        requests: dict[tuple[str | int, ...], list[tuple[tuple[str | int, ...], str]]] = {}
        for loc, expression in device_selectors(deployment):
            requests.setdefault(loc[:_REQUEST], []).append((loc, expression))
        for selectors in requests.values():
            if any(_NAMES_DRIVER.search(expression) for _, expression in selectors):
                continue  # a request's selectors all apply: one that names the driver makes the choice explicit
            for loc, expression in selectors:
                read = {domain for _, domain, _ in READ.findall(expression) if domain in VENDORS and classes[domain]}
                findings += [Finding(deployment, loc, _message(domain, other, classes[other]), CODE)
                             for domain in sorted(read) for other in sorted(VENDORS.keys() - read) if classes[other]]
    return findings


def _message(domain: str, other: str, names: list[str]) -> str:
    listed = ", ".join(names)
    return (f"this selector reads the {VENDORS[domain]} domain {domain!r}, which {VENDORS[other]} devices do not "
            f"publish (theirs is {other!r}), so it never matches InferenceClass {listed} and those pools are never "
            f"candidates for this member; if that is meant, say so with device.driver == {domain!r}, else add a "
            f"selector for {other!r} under an || (e.g. device.driver == {other!r} && ...)")
