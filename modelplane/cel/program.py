"""Compiling selectors once and evaluating them against devices, memoized per plan.

Contract:
- ``compile_selector(text)`` validates as Kubernetes admission does (length, syntax, types,
  estimated cost) and raises ``SelectorError``; it returns a ``Program`` that evaluates with the
  fast path when it covers the expression, else with the cel-python reference.
- ``Program.evaluate(device)`` gives Kubernetes' answer for one device: it matches only on the
  bool true; an error or any other result is no match, and ``reason`` says which and why.
- ``SelectorEvaluator`` compiles each distinct expression once and evaluates each distinct
  (expression, device) pair at most once (asked again for the same device object, it answers
  from a memo keyed by the object). Beyond that, when every device path an expression reads
  is static (``fast.device_reads``), devices that agree on those paths share one evaluation: the
  result cannot tell them apart, and the reason names only those paths.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy.celtypes import BoolType

from modelplane.cel import check, parser, reference, syntax
from modelplane.cel.device import Device
from modelplane.cel.errors import SelectorError
from modelplane.cel.fast import Closure, EvalError, Read, compile_fast, device_reads
from modelplane.cel.library import type_name


@dataclass(frozen=True)
class Evaluation:
    matched: bool
    reason: str | None  # None when matched


_MATCHED = Evaluation(True, None)


@dataclass(frozen=True, eq=False)
class Program:
    text: str
    reads: tuple[Read, ...] | None  # None: some device read is not a static path
    run: Closure  # the fast path's closure, or the reference on the expression's parse tree
    fast: bool

    def memo_key(self, device: Device) -> Hashable:
        """What the result can depend on: the values at the static read paths, else the device."""
        return _memo_key(self.reads, device)

    def evaluate(self, device: Device) -> Evaluation:
        if device.defect is not None:
            return Evaluation(False, f"error: {device.defect}")
        try:
            value = self.run(device)
        except EvalError as error:
            return Evaluation(False, f"error: {error.message}")
        if not isinstance(value, BoolType):
            return Evaluation(False, f"returned {type_name(value)}, not bool")
        if value:
            return _MATCHED
        if not self.reads:
            return Evaluation(False, "evaluated to false")
        return Evaluation(False, "evaluated to false; it read " + ", ".join(_describe(device, r) for r in self.reads))


def _memo_key(reads: tuple[Read, ...] | None, device: Device) -> Hashable:
    if reads is None or device.defect is not None:
        return device
    return tuple(_observe(device, read) for read in reads)


def _observe(device: Device, read: Read) -> Hashable:
    if read.section == "driver":
        return device.driver
    if not read.name:
        return device.has_domain(read.section, read.domain)
    return device.published.get((read.section, read.domain, read.name))


def _describe(device: Device, read: Read) -> str:
    if read.section == "driver":
        return f"{read} = {json.dumps(device.driver)}"
    if not read.name:
        return f"{read} is {'present' if device.has_domain(read.section, read.domain) else 'absent'}"
    published = device.published.get((read.section, read.domain, read.name))
    if published is None:
        return f"{read} is absent"
    kind, raw = published
    shown = json.dumps(raw) if kind in ("string", "bool") else str(raw)
    return f"{read} = {shown}"


@functools.lru_cache(maxsize=1 << 16)
def compile_selector(text: str) -> Program:
    """Compile (and admit) one selector. Pure, so memoized for the process: the loader validates
    every selector and each plan evaluates the same ones; a rejected one raises each time.

    The bound is well above a large fleet's distinct selectors: at 8,192 the varied 1,000 x 10,000
    benchmark fleet (11,463 distinct) missed on every selector in each plan, an LRU cache being read
    in the same order it was filled, and compiled 30,188 times instead of 11,463; place took 14.7
    CPU s, re-place 9.4, against 10.2 and 6.7 with this bound, at a lower peak RSS (2026-11-26)."""
    ast = parser.parse(text)
    check.check(ast, text)
    fast = compile_fast(ast)
    if fast is not None:
        return Program(text, device_reads(ast), fast, fast=True)
    return Program(text, device_reads(ast), reference.evaluator(syntax.parse_tree(text)), fast=False)


def check_selector(expression: str) -> None:
    """Validate one selector as the Kubernetes API server would at admission; raise SelectorError."""
    compile_selector(expression)


class SelectorEvaluator:
    """Per-plan memo: compile each distinct expression once, evaluate each distinct pair once."""

    def __init__(self) -> None:
        self._programs: dict[str, Program | SelectorError] = {}
        self._results: dict[tuple[str, Hashable], Evaluation] = {}
        self._by_device: dict[tuple[str, int], Evaluation] = {}
        self._partitions: dict[tuple[tuple[Read, ...] | None, int],
                               tuple[tuple[Device, ...], tuple[tuple[Hashable, int, Device], ...]]] = {}
        """By read paths and the identity of the tuple of devices, which each entry holds."""
        self._devices: list[Device] = []  # kept alive, so that the ids in _by_device stay theirs
        self._evaluations = 0

    def program(self, expression: str) -> Program:
        """The compiled selector; raises SelectorError (once compiled, every time) if Kubernetes rejects it."""
        program = self._programs.get(expression)
        if program is None:
            try:
                program = compile_selector(expression)
            except SelectorError as error:
                program = error
            self._programs[expression] = program
        if isinstance(program, SelectorError):
            raise program
        return program

    def evaluate(self, expression: str, device: Device) -> Evaluation:
        seen = (expression, id(device))
        result = self._by_device.get(seen)
        if result is not None:
            return result
        program = self.program(expression)
        result = self._result(expression, program, program.memo_key(device), device)
        self._by_device[seen] = result
        self._devices.append(device)
        return result

    def matching(self, expression: str, devices: tuple[Device, ...]) -> int:
        """The devices the expression matches, as a bit mask (bit i: `devices[i]`), from the same
        memo as `evaluate`. For a caller that asks every expression about one tuple of devices:
        the devices are grouped once per set of read paths by what they observe there
        (`_partition`), and each group is asked once; no memo per device object, no `Evaluation`
        handed back per device."""
        program = self.program(expression)
        found = 0
        for key, bits, device in self._partition(program.reads, devices):
            if self._result(expression, program, key, device).matched:
                found |= bits
        return found

    def _result(self, expression: str, program: Program, key: Hashable, device: Device) -> Evaluation:
        """The memo of every evaluation: `device`'s result, shared by the devices of its `memo_key`."""
        memo = (expression, key)
        result = self._results.get(memo)
        if result is None:
            result = self._results[memo] = program.evaluate(device)
            self._evaluations += 1
        return result

    def _partition(self, reads: tuple[Read, ...] | None, devices: tuple[Device, ...]
                   ) -> tuple[tuple[Hashable, int, Device], ...]:
        """`devices` grouped by `_memo_key`: per group its key, its bits, and one of its devices
        (memoized per read paths and tuple of devices, which the memo holds: the varied 1,000 x
        10,000 benchmark fleet's 11,463 expressions read a few sets of paths of its 22 distinct
        devices)."""
        held = self._partitions.get((reads, id(devices)))
        if held is None:
            groups: dict[Hashable, tuple[int, Device]] = {}
            for index, device in enumerate(devices):
                key = _memo_key(reads, device)
                bits, sample = groups.get(key, (0, device))
                groups[key] = (bits | 1 << index, sample)
            held = self._partitions[(reads, id(devices))] = (
                devices, tuple((key, bits, sample) for key, (bits, sample) in groups.items()))
        return held[1]

    @property
    def evaluations(self) -> int:
        """Real (not memoized) evaluations so far."""
        return self._evaluations

    @property
    def compilations(self) -> int:
        """Distinct expressions compiled so far, rejected ones included."""
        return len(self._programs)


def selector_matches(expression: str, device: Mapping[str, Any]) -> bool:
    """Public convenience: True/False per Kubernetes semantics.

    Raises SelectorError for an expression Kubernetes rejects.
    """
    return compile_selector(expression).evaluate(Device.from_class_device(device)).matched
