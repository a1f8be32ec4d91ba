"""The fast path: common selector shapes compiled from the AST into Python closures.

Contract: ``compile_fast(ast)`` returns a function of a ``Device`` that gives the same value as
cel-python's interpreter with ``library.FUNCTIONS`` (the reference), raising ``EvalError`` exactly
where the reference yields an error, or returns ``None`` when the expression has a shape it does
not cover; the caller then uses the reference. tests/cel/test_differential.py holds it to that.

Covered: literals; list literals; ``device.driver``; ``device.attributes[<string>].<name>``,
``device.capacity[<string>].<name>`` and the ``[<string>]`` spelling of the name; ``==``, ``!=``,
``<``, ``<=``, ``>``, ``>=``, ``in``, ``&&``, ``||``, ``!``, ``?:``; ``quantity()``, ``semver()``,
``isQuantity()``, ``isSemver()`` (folded once when their arguments are literals), ``sign()`` and
every member function of the quantity and semver libraries. Everything else (arithmetic, macros, ``has``,
``size``, string functions, other uses of ``device``) falls back.

``device_reads(ast)`` lists the device paths an expression can read, or ``None`` when some read
is not one of the static paths above. An expression's result depends on nothing else, which is
what lets the evaluator share one evaluation between devices that agree on those paths.

Invariants: ``&&``/``||`` stop early only on the deciding value, which gives the same result as
the reference's evaluate-both-then-combine, because evaluation has no effects; errors are raised
in the reference's order (left operand, then right; receiver, then arguments).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celpy.celtypes import BoolType, ListType

from modelplane.cel import library
from modelplane.cel.device import ATTRIBUTES, CAPACITY, Device
from modelplane.cel.syntax import (
    Binary,
    Call,
    Conditional,
    Ident,
    Index,
    ListLit,
    Literal,
    Node,
    Select,
    Unary,
    children,
)

Closure = Callable[[Device], Any]
_SECTIONS = (ATTRIBUTES, CAPACITY)
_GLOBALS = ("quantity", "semver", "isQuantity", "isSemver", "sign")
_METHODS = ("compareTo", "isGreaterThan", "isLessThan", "isInteger", "asInteger", "asApproximateFloat",
            "add", "sub", "major", "minor", "patch")
_COMPARISONS = {"==": library.equal, "!=": library.not_equal, "<": library.less, "<=": library.less_equal,
                ">": library.greater, ">=": library.greater_equal, "in": library.contained_in}


class EvalError(Exception):
    """A CEL runtime error: the device does not match, and ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Read:
    """A static device path: ``device.driver``, a domain's presence, or one named value."""

    section: str  # "driver", "attributes" or "capacity"
    domain: str = ""
    name: str = ""  # empty for a domain's presence

    def __str__(self) -> str:
        if self.section == "driver":
            return "device.driver"
        path = f'device.{self.section}["{self.domain}"]'
        return f"{path}.{self.name}" if self.name else path


def _string(node: Node) -> str | None:
    return str(node.value) if isinstance(node, Literal) and node.kind == "string" else None


def _section(node: Node) -> str | None:
    """``device.attributes`` or ``device.capacity``."""
    if isinstance(node, Select) and isinstance(node.operand, Ident) and node.operand.name == "device":
        return node.field if node.field in _SECTIONS else None
    return None


def _domain(node: Node) -> tuple[str, str] | None:
    """``device.<section>[<string>]``."""
    if isinstance(node, Index):
        section, domain = _section(node.operand), _string(node.index)
        if section is not None and domain is not None:
            return section, domain
    return None


def _static_read(node: Node) -> Read | None:
    """The read a node performs when it is one of the static device paths."""
    if isinstance(node, Select) and isinstance(node.operand, Ident) and node.operand.name == "device":
        return Read("driver") if node.field == "driver" else None
    if isinstance(node, (Select, Index)):
        domain = _domain(node.operand)
        name = node.field if isinstance(node, Select) else _string(node.index)
        if domain is not None and name is not None:
            return Read(domain[0], domain[1], name)
    if isinstance(node, Binary) and node.op == "in" and _string(node.left) is not None:
        section, domain = _section(node.right), _domain(node.right)
        if section is not None:
            return Read(section, str(_string(node.left)))
        if domain is not None:
            return Read(domain[0], domain[1], str(_string(node.left)))
    return None


def device_reads(ast: Node) -> tuple[Read, ...] | None:
    """Every static device path the expression reads, in source order; None if one is dynamic."""
    reads: list[Read] = []
    stack: list[Node] = [ast]
    while stack:
        node = stack.pop()
        read = _static_read(node)
        if read is not None:
            if read not in reads:
                reads.append(read)
            continue
        if isinstance(node, Ident) and node.name == "device":
            return None
        if isinstance(node, Call) and node.args and isinstance(node.args[0], Ident) and node.args[0].name == "device":
            return None  # a macro variable shadowing ``device``
        stack.extend(reversed(children(node)))
    return tuple(reads)


def _is_bool(value: Any, truth: bool) -> bool:
    return isinstance(value, BoolType) and bool(value) is truth


def _guarded(function: Callable[..., Any], *args: Any) -> Any:
    try:
        return function(*args)
    except library.RUNTIME_ERRORS as error:
        raise EvalError(str(error)) from None


def _constant(value: Any) -> Closure:
    return lambda device: value


def _failing(message: str) -> Closure:
    def fail(device: Device) -> Any:
        raise EvalError(message)

    return fail


class _Unsupported(Exception):
    """The expression has a shape the fast path does not cover."""


def compile_fast(ast: Node) -> Closure | None:
    try:
        return _compile(ast)
    except _Unsupported:
        return None


def _compile(node: Node) -> Closure:  # noqa: C901 - one branch per node kind
    read = _static_read(node)
    if read is not None:
        return _presence(read) if isinstance(node, Binary) else _reader(read)
    if isinstance(node, Literal):
        return _constant(node.value)
    if isinstance(node, ListLit):
        items = [_compile(item) for item in node.items]
        return lambda device: ListType([item(device) for item in items])
    if isinstance(node, Binary) and node.op in ("&&", "||"):
        return _logical(_compile(node.left), _compile(node.right), decisive=node.op == "||")
    if isinstance(node, Binary) and node.op in _COMPARISONS:
        return _call(_COMPARISONS[node.op], [_compile(node.left), _compile(node.right)])
    if isinstance(node, Unary) and node.op == "!":
        return _negation(_compile(node.operand))
    if isinstance(node, Conditional):
        return _conditional(_compile(node.condition), _compile(node.then), _compile(node.otherwise))
    if isinstance(node, Call) and node.target is None and node.function in _GLOBALS:
        return _global(node)
    if isinstance(node, Call) and node.target is not None and node.function in _METHODS:
        return _call(library.FUNCTIONS[node.function], [_compile(node.target), *map(_compile, node.args)])
    raise _Unsupported


def _reader(read: Read) -> Closure:
    if read.section == "driver":
        return lambda device: device.driver_value
    key, missing = (read.section, read.domain, read.name), f"no such key: {read.name}"

    def value(device: Device) -> Any:
        found = device.values.get(key)
        if found is None:
            raise EvalError(missing)
        return found

    return value


def _presence(read: Read) -> Closure:
    """``"<domain>" in device.<section>`` or ``"<name>" in device.<section>["<domain>"]``."""
    if not read.name:
        return lambda device: BoolType(device.has_domain(read.section, read.domain))
    key = (read.section, read.domain, read.name)
    return lambda device: BoolType(key in device.values)


def _call(function: Callable[..., Any], operands: list[Closure]) -> Closure:
    if len(operands) == 1:
        (only,) = operands
        return lambda device: _guarded(function, only(device))
    if len(operands) == 2:
        first, second = operands
        return lambda device: _guarded(function, first(device), second(device))
    return lambda device: _guarded(function, *(operand(device) for operand in operands))


def _global(node: Call) -> Closure:
    function = library.FUNCTIONS[node.function]
    literals = [arg for arg in node.args if isinstance(arg, Literal)]
    if len(literals) == len(node.args):
        try:
            return _constant(_guarded(function, *(literal.value for literal in literals)))
        except EvalError as error:
            return _failing(error.message)
    return _call(function, [_compile(arg) for arg in node.args])


def _logical(left: Closure, right: Closure, *, decisive: bool) -> Closure:
    name = "_||_" if decisive else "_&&_"

    def combine(device: Device) -> Any:
        try:
            first: Any = left(device)
        except EvalError as error:
            first = error
        if _is_bool(first, decisive):
            return first
        try:
            second: Any = right(device)
        except EvalError as error:
            second = error
        if _is_bool(second, decisive):
            return second
        for value in (first, second):
            if isinstance(value, EvalError):
                raise value
            if not isinstance(value, BoolType):
                raise EvalError(f"found no matching overload for '{name}' applied to '({library.type_name(value)})'")
        return BoolType(not decisive)

    return combine


def _negation(operand: Closure) -> Closure:
    def negate(device: Device) -> Any:
        value = operand(device)
        if not isinstance(value, BoolType):
            raise EvalError(f"found no matching overload for '!_' applied to '({library.type_name(value)})'")
        return BoolType(not value)

    return negate


def _conditional(condition: Closure, then: Closure, otherwise: Closure) -> Closure:
    def choose(device: Device) -> Any:
        value = condition(device)
        if not isinstance(value, BoolType):
            raise EvalError(f"found no matching overload for '_?_:_' applied to '({library.type_name(value)}, ...)'")
        return then(device) if value else otherwise(device)

    return choose

