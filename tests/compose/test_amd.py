"""AMD GPUs: the AMD GPU operator in DRA mode where a class has `gpu.amd.com` devices, NVIDIA's DRA
driver where one has `gpu.nvidia.com` devices (both on a mixed cluster), and a warning for a selector
that reads one vendor's domain where the other vendor's classes are.

Expected values: the issue (vendor by driver, both on a mixed cluster, the warning), AMD GPU Operator
v1.5.0's release notes (`spec.draDriver` in its DeviceConfig, exclusive with the device plugin), and
the domains each driver publishes under (ROCm/k8s-gpu-dra-driver docs/driver-attributes.md).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from modelplane.api import Fleet, Manifests, Workloads
from modelplane.compose import Settings, class_drivers, plan_warnings
from modelplane.compose.gateways import cluster_stack
from tests.builders import cluster, deployment, gpu, klass, memory_at_least, pool, request, standalone

H100 = klass("h100", gpu())
MI300X = klass("mi300x", gpu(memory="196592Mi", driver="gpu.amd.com", arch="AI"))
PLAIN = klass("cpu-box", {"name": "fpga", "claim": "Synthetic", "driver": "fpga.example.com"})
AMD_MEMORY = 'device.capacity["gpu.amd.com"].memory.compareTo(quantity("160Gi")) >= 0'


def addons(*pools: tuple[str, str]) -> dict[str, object]:
    """The GPU vendor add-ons (name -> values) of a cluster with these (pool, class) pools."""
    c = cluster("c", *(pool(name, cls) for name, cls in pools))
    fleet = Fleet(clusters=(c,), classes=(H100, MI300X, PLAIN))
    return {a.name: a for a in cluster_stack(c, Settings(), None, class_drivers(fleet, c))
            if a.name in ("nvidia-dra-driver-gpu", "amd-gpu-operator")}


@pytest.mark.parametrize(("pools", "want"), [
    ((("h", "h100"),), ["nvidia-dra-driver-gpu"]),
    ((("m", "mi300x"),), ["amd-gpu-operator"]),
    ((("h", "h100"), ("m", "mi300x")), ["amd-gpu-operator", "nvidia-dra-driver-gpu"]),
    ((("f", "cpu-box"),), ["nvidia-dra-driver-gpu"]),  # no vendor class: the stack as it was before AMD support
], ids=["NVIDIA only", "AMD only", "mixed gets both", "no GPU vendor keeps NVIDIA's driver"])
def test_each_vendor_gets_its_dra_add_on(pools: tuple[tuple[str, str], ...], want: list[str]) -> None:
    assert sorted(addons(*pools)) == want


def test_the_amd_operator_runs_its_dra_driver_instead_of_the_device_plugin() -> None:
    operator = addons(("m", "mi300x"))["amd-gpu-operator"]
    assert (operator.chart_ref, operator.repository, operator.version, operator.namespace) == (
        "gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.0", "kube-amd-gpu")
    spec = operator.values["deviceConfig"]["spec"]
    assert spec["draDriver"] == {"enable": True} and spec["devicePlugin"] == {"enableDevicePlugin": False}
    assert operator.values["node-feature-discovery"] == {"enabled": False}, "the stack installs NFD once"
    assert operator.depends_on == ("node-feature-discovery",)


def test_the_amd_operator_pin_is_overridable() -> None:
    c = cluster("c", pool("m", "mi300x"))
    fleet = Fleet(clusters=(c,), classes=(MI300X,))
    stack = cluster_stack(c, replace(Settings(), amd_gpu_operator_version="v1.6.0"), None, class_drivers(fleet, c))
    assert next(a for a in stack if a.name == "amd-gpu-operator").version == "v1.6.0"


def warnings(selectors: list[str], *classes: object) -> list[tuple[str, str]]:
    names = [k.name for k in classes]  # type: ignore[attr-defined]
    fleet = Fleet(clusters=(cluster("c", *(pool(n, n) for n in names)),), classes=classes)  # type: ignore[arg-type]
    work = Workloads(deployments=(deployment("m", standalone(request(*selectors))),))
    return [(w.path, w.code) for w in plan_warnings(Manifests(fleet, work))
            if w.code == "selector-reads-other-vendor"]


NVIDIA_MEMORY = memory_at_least("40Gi")
SELECTOR = "spec.engines[0].members[0].nodeSelector.devices[0].selectors[{}].cel"


@pytest.mark.parametrize(("selectors", "classes", "want"), [
    ([NVIDIA_MEMORY], (H100, MI300X), [SELECTOR.format(0)]),
    ([AMD_MEMORY], (H100, MI300X), [SELECTOR.format(0)]),
    ([NVIDIA_MEMORY], (H100,), []),
    ([AMD_MEMORY], (H100,), []),  # matches no device at all: selector-matches-no-device says so
    (['device.driver == "gpu.nvidia.com"', NVIDIA_MEMORY], (H100, MI300X), []),
    ([f"({NVIDIA_MEMORY}) || ({AMD_MEMORY})"], (H100, MI300X), []),
    (['device.attributes["gpu.nvidia.com"].architecture == "Hopper"', NVIDIA_MEMORY], (H100, MI300X),
     [SELECTOR.format(0), SELECTOR.format(1)]),
], ids=["NVIDIA domain with an AMD class", "AMD domain with an NVIDIA class", "one vendor only: nothing to warn of",
        "only the other vendor's classes: the no-device warning instead",
        "the request names the driver", "a selector reading both vendors", "each selector of the request"])
def test_a_selector_reading_one_vendor_where_the_other_is_warns(selectors: list[str], classes: tuple[object, ...],
                                                                 want: list[str]) -> None:
    assert [path for path, _ in warnings(selectors, *classes)] == want


def test_the_warning_names_the_domain_the_class_and_the_fix() -> None:
    fleet = Fleet(clusters=(cluster("c", pool("h", "h100"), pool("m", "mi300x")),), classes=(H100, MI300X))
    work = Workloads(deployments=(deployment("m", standalone(request(NVIDIA_MEMORY))),))
    [warning] = [w for w in plan_warnings(Manifests(fleet, work)) if w.code == "selector-reads-other-vendor"]
    assert warning.message == (
        "this selector reads the NVIDIA domain 'gpu.nvidia.com', which AMD devices do not publish (theirs is "
        "'gpu.amd.com'), so it never matches InferenceClass mi300x and those pools are never candidates for this "
        "member; if that is meant, say so with device.driver == 'gpu.nvidia.com', else add a selector for "
        "'gpu.amd.com' under an || (e.g. device.driver == 'gpu.amd.com' && ...)")
