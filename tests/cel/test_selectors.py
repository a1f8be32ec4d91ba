"""Selectors against devices: the seed documents' selectors, then the DRA device view's rules.

Expected values: the seed (shared/seeds/001_*.txt, "Requesting GPUs" and "What you can match on")
says what each selector means; the arithmetic is Kubernetes' (80Gi = 81920Mi, so an H100 that
publishes 81559Mi has less). The device view's rules come from
staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go (DeviceMatches, mapper.Find) and its
compile_test.go cases, cited per case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from modelplane.cel import Device, SelectorEvaluator, selector_matches
from tests.cel.devices import A100_80, BARE, H100, H200, L4, MI300X, NIC, gpu

MEMORY = 'device.capacity["gpu.nvidia.com"].memory'
ARCH = 'device.attributes["gpu.nvidia.com"].architecture'
FLEET = {"L4": L4, "A100-80": A100_80, "H100": H100, "H200": H200}


@dataclass(frozen=True)
class Seed:
    name: str
    cel: str
    matches: tuple[str, ...]  # which of L4, A100-80, H100, H200 match


SEEDS = [
    Seed("qwen-demo: at least 20Gi", f'{MEMORY}.compareTo(quantity("20Gi")) >= 0',
         ("L4", "A100-80", "H100", "H200")),
    Seed("requesting GPUs: at least 40Gi (a YAML block, so a trailing newline)",
         f'{MEMORY}.compareTo(quantity("40Gi")) >= 0\n', ("A100-80", "H100", "H200")),
    Seed("architecture equality", f'{ARCH} == "Hopper"', ("H100", "H200")),
    Seed("a NIC selector matches no GPU", 'device.attributes["nic.nvidia.com"].linkType == "infiniband"', ()),
    Seed("compute capability above 8.9.0 (8.9.0 itself is not above)",
         'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.9.0"))',
         ("H100", "H200")),
    Seed("driver equality", 'device.driver == "gpu.nvidia.com"', ("L4", "A100-80", "H100", "H200")),
    Seed("domain presence", '"gpu.nvidia.com" in device.attributes', ("L4", "A100-80", "H100", "H200")),
    Seed("Hopper with 80Gi: the H100's 81559Mi is less than 80Gi",
         f'{ARCH} == "Hopper" &&\n{MEMORY}.compareTo(quantity("80Gi")) >= 0\n', ("H200",)),
    Seed("qwen3-coder: at least 120Gi", f'{MEMORY}.compareTo(quantity("120Gi")) >= 0\n', ("H200",)),
]


@pytest.mark.parametrize("case", SEEDS, ids=lambda c: c.name)
def test_seed_selectors(case: Seed) -> None:
    assert tuple(name for name, device in FLEET.items() if selector_matches(case.cel, device)) == case.matches


@dataclass(frozen=True)
class Case:
    name: str
    cel: str
    device: dict[str, Any]
    matched: bool
    reason: str | None


CASES = [
    # compile_test.go "qualified-attribute-name": a domain/name key belongs to that domain.
    Case("a qualified key is read under its own domain", 'device.attributes["nvidia.com"].fp8', H100, True, None),
    Case("a qualified key is not under the driver's domain", 'device.attributes["gpu.nvidia.com"].fp8', H100,
         False, "error: no such key: fp8"),
    # compile_test.go "driver-name-qualifier": a bare name belongs to the driver's domain.
    Case("a bare name is under the driver's domain", 'device.attributes["gpu.nvidia.com"].index == 0', H100, True,
         None),
    Case("the index spelling of a name", 'device.attributes["gpu.nvidia.com"]["architecture"] == "Hopper"', H100,
         True, None),
    # compile_test.go "runtime-error-lookup-identifier": an unknown domain is an empty map.
    Case("an unknown domain's attribute is no such key", 'device.attributes["no-such-domain"].x == 1', H100, False,
         "error: no such key: x"),
    Case("an unknown attribute of a known domain is no such key", f'{ARCH}2 == "Hopper"', H100, False,
         "error: no such key: architecture2"),
    # compile_test.go "domain-check-negative" / "domain-check-positive".
    Case("presence of an unknown domain is false", '"no-such-domain" in device.attributes', H100, False,
         'evaluated to false; it read device.attributes["no-such-domain"] is absent'),
    Case("presence of a capacity domain", '"gpu.amd.com" in device.capacity', MI300X, True, None),
    # compile_test.go "check-negative": guarding an absent name with `in` avoids the error.
    Case("a guarded read of an absent name", f'!("memory" in device.capacity["gpu.nvidia.com"]) || '
         f'{MEMORY}.isGreaterThan(quantity("1Ki"))', BARE, True, None),
    Case("another vendor's domain on an AMD device", f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', MI300X, False,
         "error: no such key: memory"),
    Case("the AMD domain on the AMD device",
         'device.capacity["gpu.amd.com"].memory.compareTo(quantity("80Gi")) >= 0', MI300X, True, None),
    Case("a device without attributes or capacity", '"gpu.nvidia.com" in device.attributes', BARE, False,
         'evaluated to false; it read device.attributes["gpu.nvidia.com"] is absent'),
    # CEL's && and || are commutative over errors (cel-spec langdef, "Logical operators").
    Case("false && error is false", 'device.attributes["nic.nvidia.com"].linkType == "x" && false', H100, False,
         'evaluated to false; it read device.attributes["nic.nvidia.com"].linkType is absent'),
    Case("error || true is true", 'device.attributes["nic.nvidia.com"].linkType == "x" || true', H100, True, None),
    Case("error || false is the error", 'device.attributes["nic.nvidia.com"].linkType == "x" || false', H100, False,
         "error: no such key: linkType"),
    # compile_test.go "list-result-type-causes-match-error": a non-bool result does not match.
    Case("an int result does not match", 'device.attributes["gpu.nvidia.com"].index', H100, False,
         "returned int, not bool"),
    Case("a string result does not match", ARCH, H100, False, "returned string, not bool"),
    Case("a false result names what it read", f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', H100, False,
         'evaluated to false; it read device.capacity["gpu.nvidia.com"].memory = 81559Mi'),
    Case("string values are quoted in the reason", f'{ARCH} == "Blackwell"', H100, False,
         'evaluated to false; it read device.attributes["gpu.nvidia.com"].architecture = "Hopper"'),
    # A version attribute on both sides of >= is only known at run time: no match, with the hint.
    Case("a relational operator on two version attributes fails at run time",
         'device.attributes["gpu.nvidia.com"].cudaComputeCapability >= '
         'device.attributes["gpu.nvidia.com"].cudaComputeCapability', H100, False,
         "error: found no matching overload for '_>=_' applied to '(kubernetes.Semver, kubernetes.Semver)' "
         "(use compareTo: a.compareTo(b) >= 0, or isGreaterThan/isLessThan)"),
    Case("heterogeneous equality is false, not an error", f'{ARCH} != 1', H100, True, None),
    Case("ordering a string against an int is an error", f'{ARCH} < 1', H100, False,
         "error: found no matching overload for '_<_' applied to '(string, int)'"),
    Case("in over a list literal", f'{ARCH} in ["Hopper", "Blackwell"]', H100, True, None),
    Case("a macro falls back to cel-python and still reads the device",
         '["Ampere", "Hopper"].exists(a, a == device.attributes["gpu.nvidia.com"].architecture)', H100, True, None),
    Case("a NIC's link type", 'device.attributes["nic.nvidia.com"].linkType == "infiniband"', NIC, True, None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_evaluate(case: Case) -> None:
    result = SelectorEvaluator().evaluate(case.cel, Device.from_class_device(case.device))
    assert (result.matched, result.reason) == (case.matched, case.reason)


def test_a_version_attribute_that_does_not_parse_fails_every_selector() -> None:
    # compile.go getAttributeValue: "parse semantic version" fails DeviceMatches whatever the expression.
    device = Device.from_class_device(gpu("80Gi", "Hopper", "9.0"))
    result = SelectorEvaluator().evaluate("true", device)
    assert not result.matched
    assert result.reason is not None
    assert result.reason.startswith("error: attribute gpu.nvidia.com/cudaComputeCapability: parse semantic version")


def test_equal_content_is_an_equal_device() -> None:
    renamed = {**H100, "name": "accelerator", "deviceClassName": "other-class", "count": 4}
    assert Device.from_class_device(H100) == Device.from_class_device(renamed)
    assert hash(Device.from_class_device(H100)) == hash(Device.from_class_device(renamed))
    assert Device.from_class_device(H100) != Device.from_class_device(H200)
