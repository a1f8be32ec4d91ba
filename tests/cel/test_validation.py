"""Admission: what check_selector rejects, where, and why; and that nothing runs away.

Expected values come from Kubernetes: the limits in pkg/apis/resource/types.go
(CELSelectorExpressionMaxLength = 10 * 1024, CELSelectorExpressionMaxCost = 1000000), the
validation in pkg/apis/resource/validation/validation.go ("Too long", "too complex, exceeds cost
limit"), the compile errors of dynamic-resource-allocation/cel/compile_test.go ("syntax-error",
"type-error": "must evaluate to bool or the unknown type, not int") and cel-go's checker messages
("undeclared reference", "undefined field", "found no matching overload"). Columns are 1-based.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from modelplane.cel import Device, SelectorError, SelectorEvaluator, check_selector
from modelplane.cel.reference import STEP_BUDGET
from tests.cel.devices import H100

MEMORY = 'device.capacity["gpu.nvidia.com"].memory'


@dataclass(frozen=True)
class Case:
    name: str
    cel: str
    message: str  # a substring of SelectorError.message
    column: int | None
    line: int | None = 1


CASES = [
    Case("a syntax error points at the offending token", "device.driver == == 1", "Syntax error: unexpected '=='",
         18),
    Case("compile_test.go's syntax error", "?!", "Syntax error", 1),
    Case("an unterminated expression", "(1 + ", "unexpected end of expression", 4),
    Case("a bad character", "device.driver == 'x' # y", "unexpected character '#'", 22),
    Case("the second line of a YAML block", 'device.driver == "x" &&\n  device.foo', "undefined field 'foo'", 10,
         line=2),
    Case("compile_test.go's type error", "1", "must evaluate to bool or the unknown type, not int", None, None),
    Case("a string result", 'device.driver', "not string", None, None),
    Case("a Kubernetes function not supported here", 'device.driver.lowerAscii() == "x"',
         "lowerAscii() is a Kubernetes CEL function modelplane does not support; write the selector with the "
         "supported functions: add, all, asApproximateFloat", 15),
    Case("a function of no library", 'device.driver.lower() == "x"',
         "undeclared reference to 'lower': no such function; the supported functions are: add,", 15),
    Case("Kubernetes' sets library", "sets.contains([1], [1])", "sets.contains() is a Kubernetes CEL function", 6),
    Case("an undeclared variable", "gpu.memory > 1", "undeclared reference to 'gpu'", 1),
    Case("device has three fields", "device.vendor == 'x'", "undefined field 'vendor'", 8),
    Case(">= on a quantity call, with the rewrite", f'{MEMORY} >= quantity("80Gi")',
         f"applied to '(kubernetes.Quantity, kubernetes.Quantity)' (use compareTo: "
         f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', 42),
    Case("< on a capacity against an int", f"{MEMORY} < 1", "use compareTo", 42),
    Case("> on a semver call", 'semver("9.0.0") > semver("8.9.0")', "(kubernetes.Semver, kubernetes.Semver)", 17),
    Case("an attribute (any) against a semver call is still static",
         'device.attributes["gpu.nvidia.com"].cudaComputeCapability >= semver("9.0.0")', "(any, kubernetes.Semver)",
         59),
    Case("quantity takes a string", "quantity(40) == quantity(40)",
         "found no matching overload for 'quantity' applied to '(int)'", 1),
    Case("compareTo across kinds", f'{MEMORY}.compareTo(semver("1.0.0")) == 0', "'compareTo'", 42),
    Case("string repetition does not exist", '"x" * 100000000 == ""', "'_*_' applied to '(string, int)'", 5),
    Case("cel.bind is not available", 'cel.bind(x, 1, x > 0)', "cel.bind is not supported", 5),
    Case("an int literal past int64", "device.attributes['d'].n == 9223372036854775808", "invalid int literal", 29),
    Case("mixed-type equality of static types", 'device.driver == 1', "'_==_' applied to '(string, int)'", 15),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rejected(case: Case) -> None:
    with pytest.raises(SelectorError) as raised:
        check_selector(case.cel)
    assert case.message in raised.value.message
    assert (raised.value.line, raised.value.column) == (case.line, case.column)


def test_length_limit_is_10_kib_in_bytes() -> None:
    # validation_test.go builds `device.driver == "xxx..."` exactly at the limit, then one byte over.
    at_limit = 'device.driver == ""'.replace('""', '"' + "x" * (10 * 1024 - len('device.driver == ""')) + '"')
    check_selector(at_limit)
    with pytest.raises(SelectorError, match="Too long: may not be more than 10240 bytes"):
        check_selector(at_limit.replace('"x', '"xx', 1))
    with pytest.raises(SelectorError, match="Too long"):
        check_selector('device.driver == "' + "é" * 5200 + '"')  # 5200 characters, 10400 bytes


@dataclass(frozen=True)
class Pathological:
    name: str
    cel: str
    message: str


TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def _nested(depth: int) -> str:
    names = [f"v{i}" for i in range(depth)]
    body = " + ".join(names) + " > 0"
    for name in reversed(names):
        body = f"{TEN}.all({name}, {body})"
    return body


HANG = 10.0
"""Seconds only a hang crosses. Not a performance target (benchmarks/cel_eval.py has the figures):
these tests prove that pathological input ends, with the error it deserves."""

PATHOLOGICAL = [
    # validation_test.go "CEL-cost" (with int('1'.find(...)), a regex-library call, replaced by arithmetic).
    Pathological("seven nested comprehensions exceed the cost limit", _nested(7), "too complex, exceeds cost limit"),
    # cel-go's parser limits (parser.go, maxRecursionDepth 250); tests/cel/verdicts.py has the edges.
    Pathological("deeply nested parentheses", "(" * 5000 + "true" + ")" * 5000,
                 "expression recursion limit exceeded: 250"),
    Pathological("a long chain of additions", "+".join(["1"] * 4000) + " > 0", "max recursion depth exceeded"),
    Pathological("nested lists", "[" * 3000 + "]" * 3000 + " == []", "expression recursion limit exceeded: 250"),
    Pathological("a huge string literal is only too long", 'device.driver == "' + "a" * 20000 + '"', "Too long"),
]


@pytest.mark.parametrize("case", PATHOLOGICAL, ids=lambda c: c.name)
def test_pathological_input_is_rejected_and_ends(case: Pathological) -> None:
    start = time.perf_counter()
    with pytest.raises(SelectorError, match=case.message):
        check_selector(case.cel)
    assert time.perf_counter() - start < HANG


def test_runtime_budget_stops_what_the_estimate_let_through() -> None:
    # The estimate cannot size a list held in a list, so this passes admission; 250,000 inner
    # iterations would take a minute in cel-python, and the step budget stops it.
    inner = "[" + ", ".join(str(i) for i in range(500)) + "]"
    cel = f"[{inner}].all(l, l.all(a, l.all(b, a + b >= 0)))"
    check_selector(cel)
    start = time.perf_counter()
    result = SelectorEvaluator().evaluate(cel, Device.from_class_device(H100))
    assert time.perf_counter() - start < HANG
    assert (result.matched, result.reason) == (False, f"error: evaluation exceeded the budget of {STEP_BUDGET} "
                                                      "steps; simplify the selector")


def test_two_nested_comprehensions_pass_and_finish() -> None:
    cel = _nested(2)
    check_selector(cel)
    start = time.perf_counter()
    assert SelectorEvaluator().evaluate(cel, Device.from_class_device(H100)).matched
    assert time.perf_counter() - start < HANG


def test_three_nested_comprehensions_pass_admission_but_not_the_budget() -> None:
    # Kubernetes would evaluate these 1,000 iterations; cel-python needs about 41,000 node visits
    # (0.4 s), past the budget: a deliberate divergence toward no match.
    cel = _nested(3)
    check_selector(cel)
    result = SelectorEvaluator().evaluate(cel, Device.from_class_device(H100))
    assert not result.matched and result.reason is not None and "budget" in result.reason
