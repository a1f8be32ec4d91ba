"""CEL runtime functions, one table shared by the fast path and the cel-python reference.

Contract: every function takes celpy values (``IntType``, ``StringType``, ...), ``Quantity`` or
``Semver`` and returns one, raising ``NoOverload`` (a ``TypeError``) where Kubernetes' CEL has no
overload, and ``QuantityError``/``SemverError``/``ValueError`` for a bad argument. cel-python turns
those exceptions into ``CELEvalError`` values; the fast path turns them into ``EvalError``.
Operands that are already ``CELEvalError`` values (cel-python passes them in) are returned
unchanged, left first, as cel-python's own operators do.

What this table replaces in cel-python, and why (cel-go's semantics, as Kubernetes runs them):
- ``==``/``!=``/``in``: heterogeneous equality. Values of different kinds are unequal (cel-python
  raises), numbers compare by value across int/uint/double, and ``Quantity``/``Semver`` compare
  by value; comparing one to another kind is an error when it is the receiver, as in cel-go.
- ``<``/``<=``/``>``/``>=``: same-kind ordering of numbers (across int/uint/double), strings,
  bytes and bools. On a quantity or a version it is an error whose message says to use
  ``compareTo``; the checker reports the same at compile time whenever the type is static.
- ``&&``/``||``: a non-bool operand is an error (cel-python returned it as the result); an error
  on one side is absorbed when the other side decides (``false && error`` is false).
- ``*``: string, bytes and list operands are refused: CEL has no repetition, and Python's would
  let ``"x" * 100000000`` exhaust memory.
- ``[]``: a negative list index is out of range, not Python's count from the end.
- ``matches``: the pattern is compiled as Go's regexp would (``regex``), so a pattern Kubernetes
  refuses is an error here too.
- ``string()`` of a bool is ``"true"``/``"false"``, as in cel-go (Python would say ``"True"``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from celpy.celtypes import BoolType, BytesType, DoubleType, IntType, ListType, MapType, StringType, UintType
from celpy.evaluation import CELEvalError

from modelplane.cel.quantity import Quantity, QuantityError, parse_quantity, quantity_from_int
from modelplane.cel.regex import compile_pattern
from modelplane.cel.semver import Semver, SemverError, parse_semver

_NUMBERS = (IntType, UintType, DoubleType)
_ORDERED_KINDS = (StringType, BytesType, BoolType)
_FALSE = BoolType(False)
_ORDER = {-1: IntType(-1), 0: IntType(0), 1: IntType(1)}
"""compareTo's and sign()'s results, built once: building an IntType wraps a range check in
functools.wraps on every call (8 us), and compareTo runs on nearly every device a memory floor is
matched against (8,000 times a plan of the varied 100 x 1,000 benchmark fleet)."""


class NoOverload(TypeError):
    """Kubernetes' CEL has no overload of this function for these argument types."""


def type_name(value: Any) -> str:
    """The CEL name of a runtime value's type, as error messages print it."""
    if value is None:
        return "null_type"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    for kind, name in ((BoolType, "bool"), (IntType, "int"), (UintType, "uint"), (DoubleType, "double"),
                       (StringType, "string"), (BytesType, "bytes"), (ListType, "list"), (MapType, "map")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def ordering_hint(op: str, left: str, right: str, left_text: str = "a", right_text: str = "b") -> str:
    """The message for ``<``-style operators applied to a quantity or a version."""
    return (
        f"found no matching overload for '_{op}_' applied to '({left}, {right})' "
        f"(use compareTo: {left_text}.compareTo({right_text}) {op} 0, or isGreaterThan/isLessThan)"
    )


def _no_overload(function: str, *args: Any) -> NoOverload:
    return NoOverload(f"found no matching overload for '{function}' applied to "
                      f"'({', '.join(type_name(a) for a in args)})'")


def equals(left: Any, right: Any) -> bool:
    """cel-go's heterogeneous equality (``types.Equal``); the receiver decides foreign kinds."""
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, (Quantity, Semver)):
        if type(right) is not type(left):
            raise _no_overload("_==_", left, right)
        return bool(left == right)
    if isinstance(left, _NUMBERS):
        return isinstance(right, _NUMBERS) and _number(left) == _number(right)
    # cel-python's list + list yields a plain list, so containers are tested by their Python base.
    if isinstance(left, list):
        return (isinstance(right, list) and len(left) == len(right)
                and all(equals(a, b) for a, b in zip(left, right, strict=True)))
    if isinstance(left, dict):
        return (isinstance(right, dict) and len(left) == len(right)
                and all(any(equals(k, j) and equals(v, right[j]) for j in right) for k, v in left.items()))
    for kind in _ORDERED_KINDS:
        if isinstance(left, kind):
            return isinstance(right, kind) and operator.eq(_native(left), _native(right))
    return False


def _number(value: Any) -> int | float:
    # Python compares int with float exactly, which is what cel-go's cross-type comparison does.
    return float(value) if isinstance(value, DoubleType) else int(value)


def _native(value: Any) -> Any:
    return int(value) if isinstance(value, (BoolType, IntType, UintType)) else value


def _first_error(*values: Any) -> CELEvalError | None:
    return next((v for v in values if isinstance(v, CELEvalError)), None)


def equal(left: Any, right: Any) -> Any:
    return _first_error(left, right) or BoolType(equals(left, right))


def not_equal(left: Any, right: Any) -> Any:
    return _first_error(left, right) or BoolType(not equals(left, right))


def _ordering(op: str, compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def ordered(left: Any, right: Any) -> Any:
        error = _first_error(left, right)
        if error is not None:
            return error
        if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
            return BoolType(compare(_number(left), _number(right)))
        for kind in _ORDERED_KINDS:
            if isinstance(left, kind) and isinstance(right, kind):
                return BoolType(compare(_native(left), _native(right)))
        if isinstance(left, (Quantity, Semver)) or isinstance(right, (Quantity, Semver)):
            raise NoOverload(ordering_hint(op, type_name(left), type_name(right)))
        raise _no_overload(f"_{op}_", left, right)

    return ordered


less = _ordering("<", operator.lt)
less_equal = _ordering("<=", operator.le)
greater = _ordering(">", operator.gt)
greater_equal = _ordering(">=", operator.ge)


def contained_in(item: Any, container: Any) -> Any:
    error = _first_error(item, container)
    if error is not None:
        return error
    if isinstance(container, dict):
        if isinstance(item, StringType):
            return BoolType(item in container)
        return BoolType(any(equals(item, key) for key in container))
    if isinstance(container, list):
        failure: NoOverload | None = None
        for element in container:
            try:
                if equals(item, element):
                    return BoolType(True)
            except NoOverload as error_:
                failure = failure or error_
        if failure is not None:
            raise failure
        return BoolType(False)
    raise _no_overload("@in", item, container)


def _logical(name: str, decisive: bool) -> Callable[[Any, Any], Any]:
    """``&&`` (decisive false) and ``||`` (decisive true), commutative over errors."""

    def logical(left: Any, right: Any) -> Any:
        for value in (left, right):
            if isinstance(value, BoolType) and bool(value) is decisive:
                return BoolType(decisive)
        for value in (left, right):
            if isinstance(value, CELEvalError):
                return value
            if not isinstance(value, BoolType):
                raise _no_overload(name, value)
        return BoolType(not decisive)

    return logical


logical_and = _logical("_&&_", False)
logical_or = _logical("_||_", True)


def index(container: Any, key: Any) -> Any:
    """``_[_]``: CEL lists have no negative indexes, so -1 is out of range rather than the last item."""
    if isinstance(container, list):
        if not isinstance(key, (IntType, UintType)):
            raise _no_overload("_[_]", container, key)
        if not 0 <= key < len(container):
            raise IndexError(f"index out of range: {key}")
        return container[key]
    return operator.getitem(container, key)


def multiply(left: Any, right: Any) -> Any:
    error = _first_error(left, right)
    if error is not None:
        return error
    if isinstance(left, (StringType, BytesType, ListType)) or isinstance(right, (StringType, BytesType, ListType)):
        raise _no_overload("_*_", left, right)
    return operator.mul(left, right)


def _string(function: str, value: Any) -> str:
    if not isinstance(value, StringType):
        raise _no_overload(function, value)
    return str(value)


def _flag(function: str, value: Any) -> bool:
    if not isinstance(value, BoolType):
        raise _no_overload(function, value)
    return bool(value)


def quantity(text: Any) -> Quantity:
    return parse_quantity(_string("quantity", text))


def is_quantity(text: Any) -> BoolType:
    try:
        parse_quantity(_string("isQuantity", text))
    except QuantityError:
        return BoolType(False)
    return BoolType(True)


def semver(text: Any, normalize: Any = _FALSE) -> Semver:
    return parse_semver(_string("semver", text), normalize=_flag("semver", normalize))


def is_semver(text: Any, normalize: Any = _FALSE) -> BoolType:
    try:
        parse_semver(_string("isSemver", text), normalize=_flag("isSemver", normalize))
    except SemverError:
        return BoolType(False)
    return BoolType(True)


def _same_kind(function: str, left: Any, right: Any) -> Quantity | Semver:
    if not isinstance(left, (Quantity, Semver)) or type(right) is not type(left):
        raise _no_overload(function, left, right)
    return left


def compare_to(left: Any, right: Any) -> IntType:
    return _ORDER[_same_kind("compareTo", left, right).compare(right)]


def is_greater_than(left: Any, right: Any) -> BoolType:
    return BoolType(_same_kind("isGreaterThan", left, right).compare(right) == 1)


def is_less_than(left: Any, right: Any) -> BoolType:
    return BoolType(_same_kind("isLessThan", left, right).compare(right) == -1)


def _quantity(function: str, value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise _no_overload(function, value)
    return value


def _version(function: str, value: Any) -> Semver:
    if not isinstance(value, Semver):
        raise _no_overload(function, value)
    return value


def _int64(value: int) -> IntType:
    # semver's uint64 parts become CEL ints through a Go int64 conversion, which wraps.
    return IntType((value + 2**63) % 2**64 - 2**63)


def _operand(function: str, value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, IntType):
        return quantity_from_int(int(value))
    raise _no_overload(function, value)


def matches(text: Any, pattern: Any) -> BoolType:
    return BoolType(compile_pattern(_string("matches", pattern)).search(_string("matches", text)) is not None)


def to_string(value: Any) -> StringType:
    if isinstance(value, BoolType):
        return StringType("true" if value else "false")
    return StringType(value)


def as_integer(value: Any) -> IntType:
    result = _quantity("asInteger", value).as_int64()
    if result is None:
        raise QuantityError("cannot convert value to integer")
    return IntType(result)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_==_": equal,
    "_!=_": not_equal,
    "_<_": less,
    "_<=_": less_equal,
    "_>_": greater,
    "_>=_": greater_equal,
    "_in_": contained_in,
    "_&&_": logical_and,
    "_||_": logical_or,
    "_*_": multiply,
    "_[_]": index,
    "quantity": quantity,
    "isQuantity": is_quantity,
    "semver": semver,
    "isSemver": is_semver,
    "compareTo": compare_to,
    "isGreaterThan": is_greater_than,
    "isLessThan": is_less_than,
    "sign": lambda q: _ORDER[_quantity("sign", q).sign()],
    "isInteger": lambda q: BoolType(_quantity("isInteger", q).as_int64() is not None),
    "asInteger": as_integer,
    "matches": matches,
    "string": to_string,
    "asApproximateFloat": lambda q: DoubleType(_quantity("asApproximateFloat", q).as_approximate_float()),
    "add": lambda q, other: _quantity("add", q).add(_operand("add", other)),
    "sub": lambda q, other: _quantity("sub", q).sub(_operand("sub", other)),
    "major": lambda v: _int64(_version("major", v).major),
    "minor": lambda v: _int64(_version("minor", v).minor),
    "patch": lambda v: _int64(_version("patch", v).patch),
}
"""The table handed to cel-python, and the functions the fast path calls by the same names."""

RUNTIME_ERRORS = (TypeError, ValueError)
"""What a library function may raise for a bad input, rather than a bug."""
