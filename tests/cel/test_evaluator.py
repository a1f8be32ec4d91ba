"""SelectorEvaluator: one compilation per expression, one evaluation per distinct pair (or fewer).

Expected counts follow from the evaluator's contract (program.py): a pair evaluated twice is
evaluated once; equal devices are one device; devices that agree on every path a selector reads
share its evaluation, and a selector whose reads are not static paths is evaluated per device.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from modelplane.cel import Device, SelectorError, SelectorEvaluator
from tests.cel.devices import A100_80, H100, H200, L4, MI300X

HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'


def test_same_pair_twice_is_one_evaluation() -> None:
    evaluator = SelectorEvaluator()
    device = Device.from_class_device(H100)
    first, second = evaluator.evaluate(HOPPER, device), evaluator.evaluate(HOPPER, device)
    assert first == second and first.matched
    assert (evaluator.compilations, evaluator.evaluations) == (1, 1)


def test_identical_devices_of_two_classes_share_one_evaluation() -> None:
    evaluator = SelectorEvaluator()
    one = Device.from_class_device({**H100, "deviceClassName": "class-a"})
    other = Device.from_class_device({**H100, "name": "accelerator", "deviceClassName": "class-b"})
    evaluator.evaluate(HOPPER, one)
    evaluator.evaluate(HOPPER, other)
    assert evaluator.evaluations == 1


def test_devices_that_agree_on_the_read_paths_share_one_evaluation() -> None:
    # H100 and H200 are both Hopper: for this selector they are indistinguishable.
    evaluator = SelectorEvaluator()
    for device in (H100, H200, L4, A100_80, MI300X):
        evaluator.evaluate(HOPPER, Device.from_class_device(device))
    assert evaluator.evaluations == 4  # Hopper, Ada Lovelace, Ampere, absent


def test_the_shared_reason_names_only_what_was_read() -> None:
    evaluator = SelectorEvaluator()
    evaluator.evaluate(HOPPER, Device.from_class_device(L4))
    reason = evaluator.evaluate(HOPPER, Device.from_class_device(L4)).reason
    assert reason == 'evaluated to false; it read device.attributes["gpu.nvidia.com"].architecture = "Ada Lovelace"'


def test_a_dynamic_read_is_evaluated_per_device() -> None:
    evaluator = SelectorEvaluator()
    cel = 'device.attributes.exists(d, d == "gpu.nvidia.com")'
    for device in (H100, H200):
        evaluator.evaluate(cel, Device.from_class_device(device))
    assert evaluator.evaluations == 2


def test_a_rejected_expression_is_compiled_once_and_raises_every_time() -> None:
    evaluator = SelectorEvaluator()
    device = Device.from_class_device(H100)
    for _ in range(2):
        with pytest.raises(SelectorError, match="undefined field 'memory'"):
            evaluator.evaluate("device.memory > 0", device)
    assert (evaluator.compilations, evaluator.evaluations) == (1, 0)


def test_true_and_false_are_cached_per_expression() -> None:
    evaluator = SelectorEvaluator()
    device = Device.from_class_device(H100)
    assert evaluator.evaluate("true", device).matched
    assert not evaluator.evaluate("false", device).matched
    assert (evaluator.compilations, evaluator.evaluations) == (2, 2)


def test_matching_gives_a_bit_per_matching_device_from_the_same_memo_as_evaluate() -> None:
    # Bits in the order given: H100 (0) and H200 (1) are Hopper, L4 (2) and MI300X (3) are not.
    evaluator = SelectorEvaluator()
    devices = tuple(Device.from_class_device(device) for device in (H100, H200, L4, MI300X))
    assert evaluator.matching(HOPPER, devices) == 0b0011
    assert evaluator.evaluations == 3  # Hopper, Ada Lovelace, absent
    assert [evaluator.evaluate(HOPPER, device).matched for device in devices] == [True, True, False, False]
    assert evaluator.evaluations == 3


def test_matching_asks_each_device_when_a_read_is_dynamic() -> None:
    evaluator = SelectorEvaluator()
    devices = tuple(Device.from_class_device(device) for device in (H100, MI300X, H200))
    assert evaluator.matching('device.attributes.exists(d, d == "gpu.nvidia.com")', devices) == 0b101
    assert evaluator.evaluations == 3


def test_matching_raises_for_a_rejected_expression() -> None:
    with pytest.raises(SelectorError, match="undefined field 'memory'"):
        SelectorEvaluator().matching("device.memory > 0", (Device.from_class_device(H100),))


def test_the_package_imports_no_pulumi() -> None:
    # DESIGN section 2: the core never imports Pulumi.
    code = "import sys, modelplane.cel; sys.exit('pulumi' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
