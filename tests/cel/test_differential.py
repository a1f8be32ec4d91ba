"""The fast path against the reference: same value, or an error on both sides, on every case.

The reference is cel-python 0.5.0's interpreter with our function table (reference.py); the fast
path is the closure compiler (fast.py). Hypothesis generates expressions over the whole grammar
the fast path covers (device paths, literals, quantity/semver calls and their member functions,
sign(), comparisons, in, &&, ||, !, ?:), well-typed or not, and devices with every attribute kind; the hand
table pins the cases where CEL's semantics are subtle (errors absorbed by && and ||, heterogeneous
equality, receivers of the wrong kind). Expected values are the reference's own answers; the
comment on each hand case says what Kubernetes' CEL answers, and they agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.cel import Device, parser, syntax
from modelplane.cel.errors import SelectorError
from modelplane.cel.fast import EvalError, compile_fast
from modelplane.cel.reference import evaluate as reference_evaluate
from tests.cel.devices import H100, L4, MI300X

DOMAINS = ["gpu.nvidia.com", "gpu.amd.com", "nvidia.com", "none.example"]
NAMES = ["architecture", "cc", "index", "fp8", "memory", "missing"]  # as the generated devices publish
QUANTITIES = ["80Gi", "81559Mi", "1.5", "1000m", "0", "-1", "9Ei", "1e3", "bad"]
SECTIONS = ["attributes", "capacity"]
VERSIONS = ["9.0.0", "8.9.0", "1.0.0-rc.1", "1.0.0+build", "v9.0", "01.0.0"]


def _device_path(domain: str, name: str, section: str, bracket: bool) -> str:
    return f'device.{section}["{domain}"]' + (f'["{name}"]' if bracket else f".{name}")


literals = st.one_of(
    st.sampled_from(["0", "1", "-1", "2", "9223372036854775807", "1u", "0u", "1.5", "0.0", "-2.5", "true", "false",
                     "null", '""', '"Hopper"', '"9.0.0"', '"gpu.nvidia.com"', "[]", '[1, "a"]']),
    st.builds(lambda q: f'quantity("{q}")', st.sampled_from(QUANTITIES)),
    st.builds(lambda v, n: f'semver("{v}"{", true" if n else ""})', st.sampled_from(VERSIONS), st.booleans()),
    st.builds(lambda q: f'isQuantity("{q}")', st.sampled_from(QUANTITIES)),
    st.builds(lambda v: f'isSemver("{v}")', st.sampled_from(VERSIONS)),
)
paths = st.one_of(
    st.just("device.driver"),
    st.builds(_device_path, st.sampled_from(DOMAINS), st.sampled_from(NAMES), st.sampled_from(SECTIONS), st.booleans()),
    st.builds(lambda d, s: f'"{d}" in device.{s}', st.sampled_from(DOMAINS), st.sampled_from(SECTIONS)),
    st.builds(lambda n, d: f'"{n}" in device.attributes["{d}"]', st.sampled_from(NAMES), st.sampled_from(DOMAINS)),
)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> str:
    """An expression of the fast path's grammar; composite operands are parenthesized."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(literals, paths))
    kind = draw(st.sampled_from(["binary", "method", "nullary", "sign", "not", "ternary", "list"]))
    operand = expressions(depth - 1)
    a = draw(operand)
    if kind == "binary":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]))
        return f"({a}) {op} ({draw(operand)})"
    if kind == "method":
        method = draw(st.sampled_from(["compareTo", "isGreaterThan", "isLessThan", "add", "sub"]))
        return f"({a}).{method}({draw(operand)})"
    if kind == "nullary":
        method = draw(st.sampled_from(["major", "minor", "patch", "isInteger", "asInteger", "asApproximateFloat"]))
        return f"({a}).{method}()"
    if kind == "sign":
        return f"sign({a})"
    if kind == "not":
        return f"!({a})"
    if kind == "ternary":
        return f"({a}) ? ({draw(operand)}) : ({draw(operand)})"
    return f"[{a}, {draw(operand)}]"


@st.composite
def selectors(draw: st.DrawFn, depth: int = 2) -> str:
    """A selector shaped like real ones: device reads compared with literals, then combined."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        # Mostly paths the generated devices publish, so that most cases reach a value.
        domain = draw(st.sampled_from(["gpu.nvidia.com"] * 6 + DOMAINS))
        name = draw(st.sampled_from(["architecture", "cc", "index", "fp8"] * 2 + NAMES))
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        return draw(st.sampled_from([
            f'device.capacity["{domain}"].memory.compareTo(quantity("{draw(st.sampled_from(QUANTITIES))}")) {op} 0',
            f'device.capacity["{domain}"].memory.isGreaterThan(quantity("{draw(st.sampled_from(QUANTITIES))}"))',
            f'device.attributes["{domain}"].{name}.isLessThan(semver("{draw(st.sampled_from(VERSIONS))}"))',
            f'device.attributes["{domain}"].{name} {op} {draw(literals)}',
            f'device.attributes["{domain}"].{name} in ["Hopper", 1, true]',
            f'device.attributes["{domain}"].{name}',
            f'"{domain}" in device.attributes',
            f'device.driver {op} "{domain}"',
        ]))
    kind = draw(st.sampled_from(["&&", "||", "!", "?:"]))
    a, b = draw(selectors(depth - 1)), draw(selectors(depth - 1))
    if kind == "!":
        return f"!({a})"
    if kind == "?:":
        return f"({a}) ? ({b}) : ({draw(selectors(depth - 1))})"
    return f"({a}) {kind} ({b})"


attribute_values = st.one_of(
    st.builds(lambda v: {"string": v}, st.sampled_from(["Hopper", "", "9.0.0", "gpu.nvidia.com"])),
    st.builds(lambda v: {"int": v}, st.sampled_from([0, 1, -1, 2])),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"version": v}, st.sampled_from(["9.0.0", "8.9.0", "1.0.0-rc.1"])),
)
devices = st.builds(
    lambda driver, attributes, memory: Device.from_class_device(
        {"driver": driver, "attributes": attributes, "capacity": {"memory": {"value": memory}} if memory else {}}),
    st.sampled_from(["gpu.nvidia.com"] * 3 + ["gpu.amd.com"]),
    st.dictionaries(st.sampled_from(["architecture", "cc", "index", "fp8", "nvidia.com/fp8", "other.example/cc"]),
                    attribute_values, min_size=2, max_size=5),
    st.sampled_from([None, "80Gi", "81559Mi", "24Gi", "0"]),
)


def _outcome(run: Any) -> tuple[str, ...]:
    try:
        value = run()
    except EvalError:
        return ("error",)
    return ("value", type(value).__name__, repr(value))


def _both(expression: str, device: Device) -> tuple[tuple[str, ...], tuple[str, ...]]:
    fast = compile_fast(parser.parse(expression))
    assert fast is not None, f"the fast path should cover {expression!r}"
    tree = syntax.parse_tree(expression)
    return _outcome(lambda: fast(device)), _outcome(lambda: reference_evaluate(tree, device))


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), devices)
def test_fast_path_equals_reference(expression: str, device: Device) -> None:
    try:
        parser.parse(expression)
    except SelectorError:
        return  # a literal the parser refuses (e.g. -1u): neither path ever sees it
    fast, reference = _both(expression, device)
    assert fast == reference, expression


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selectors(), devices)
def test_fast_path_equals_reference_on_realistic_selectors(expression: str, device: Device) -> None:
    fast, reference = _both(expression, device)
    assert fast == reference, expression


HAND = [
    # CEL logical operators are commutative over errors: Kubernetes gives false, true, error.
    ("false && error is false", 'false && device.attributes["x"].y', H100, ("value", "BoolType", "BoolType(False)")),
    ("error && false is false", 'device.attributes["x"].y && false', H100, ("value", "BoolType", "BoolType(False)")),
    ("error || true is true", 'device.attributes["x"].y || true', H100, ("value", "BoolType", "BoolType(True)")),
    ("true && error is the error", 'true && device.attributes["x"].y', H100, ("error",)),
    ("error || error is an error", 'device.attributes["x"].y || device.attributes["x"].z', H100, ("error",)),
    ("a non-bool operand of && is an error", "1 && true", H100, ("error",)),
    ("! of an error is the error", '!device.attributes["x"].y', H100, ("error",)),
    ("a ternary on an error is an error", 'device.attributes["x"].y ? true : false', H100, ("error",)),
    ("a ternary only evaluates the chosen branch", 'true ? true : device.attributes["x"].y', H100,
     ("value", "BoolType", "BoolType(True)")),
    # Heterogeneous equality: different kinds are unequal, numbers compare across kinds.
    ("string == int is false", '"a" == 1', H100, ("value", "BoolType", "BoolType(False)")),
    ("int == double by value", "1 == 1.0", H100, ("value", "BoolType", "BoolType(True)")),
    ("bool == int is false", "true == 1", H100, ("value", "BoolType", "BoolType(False)")),
    ("a semver receiver of a foreign kind is an error", 'semver("1.0.0") == "1.0.0"', H100, ("error",)),
    ("a foreign receiver of a semver is false", '"1.0.0" == semver("1.0.0")', H100,
     ("value", "BoolType", "BoolType(False)")),
    ("in a mixed list finds by value", '1 in [1, "a"]', H100, ("value", "BoolType", "BoolType(True)")),
    ("cross-kind ordering of numbers", "1 < 1.5", H100, ("value", "BoolType", "BoolType(True)")),
    ("ordering quantities is an error", 'quantity("1") < quantity("2")', H100, ("error",)),
    ("an invalid quantity literal errors at run time", 'quantity("bad") == quantity("bad")', H100, ("error",)),
    ("the unknown domain reads as an empty map", '"x" in device.attributes["none.example"]', H100,
     ("value", "BoolType", "BoolType(False)")),
    ("capacity of another vendor", 'sign(device.capacity["gpu.nvidia.com"].memory)', MI300X, ("error",)),
    ("a version attribute's major", 'device.attributes["gpu.nvidia.com"].cudaComputeCapability.major()', L4,
     ("value", "IntType", "IntType(8)")),
]


@pytest.mark.parametrize(("name", "expression", "device", "want"), HAND, ids=[h[0] for h in HAND])
def test_hand_table(name: str, expression: str, device: dict[str, Any], want: tuple[str, ...]) -> None:
    fast, reference = _both(expression, Device.from_class_device(device))
    assert fast == reference == want
