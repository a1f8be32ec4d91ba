"""Compile-time checks: the static types Kubernetes' CEL checker would infer, and a cost estimate.

Contract: ``check(ast)`` raises ``SelectorError`` for what Kubernetes rejects when a selector is
admitted: an undeclared function or variable, an undefined field of ``device``, no matching
overload for statically known types (including ``<`` on a quantity or a version, with the
``compareTo`` hint), a list or map literal whose elements differ in type (Kubernetes turns on
``HomogeneousAggregateLiterals``), a string literal pattern of ``matches`` that is not RE2
(``ValidateRegexLiterals``), a result that is neither bool nor the attribute type, and an
estimated cost above ``CELSelectorExpressionMaxCost``. It returns the estimated cost.

Types follow the DRA environment (dynamic-resource-allocation/cel/compile.go): ``device`` is an
object with ``driver: string``, ``attributes: map(string, map(string, any))`` and
``capacity: map(string, map(string, kubernetes.Quantity))``. ``any`` (an attribute, whose kind is
known only at run time) and ``dyn`` (``dyn()``, a field of ``any``) pass every overload check; the
runtime then decides, as in Kubernetes. They differ where cel-go's checker makes them differ: a
selector may evaluate to ``any`` but not to ``dyn``, and ``any`` cannot be a comprehension's range.
Function shapes are Kubernetes' declarations: ``quantityLibraryDecls`` (``sign`` is a global
function, the rest members) and the semver library at version 1 (``semver``/``isSemver`` with an
optional normalize flag), as the API server's base environment for 1.33 and later declares them.

The cost estimate follows the shape of cel-go's estimator (every call or operator costs one,
a comprehension costs its range's size times its body) without its exact constants: it is meant
to flag what Kubernetes flags, exponential nesting. It errs low, toward admitting; the runtime
step budget of the reference evaluator catches what it lets through.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from modelplane.cel import syntax
from modelplane.cel.errors import SelectorError
from modelplane.cel.library import ordering_hint
from modelplane.cel.regex import pattern_problem
from modelplane.cel.syntax import Binary, Call, Conditional, Ident, Index, ListLit, Literal, MapLit, Node, Select, Unary
from modelplane.invariants import InvariantError

MAX_COST = 1_000_000  # CELSelectorExpressionMaxCost, pkg/apis/resource/types.go
MAX_ELEMENTS = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice: domains, and names per domain
_UNKNOWN_SIZE = 64  # DeviceAttributeMaxValueLength, the bound Kubernetes declares for an attribute

Type = str | tuple[Any, ...]  # a name, or ("list", element) / ("map", key, value)
DYN, ANY, BOOL, INT, UINT, DOUBLE = "dyn", "any", "bool", "int", "uint", "double"
FREE = "free"  # the element type of an empty list or map literal: unifies with anything, prints as dyn
STRING, BYTES, NULL = "string", "bytes", "null"
QUANTITY, SEMVER, DEVICE = "kubernetes.Quantity", "kubernetes.Semver", "kubernetes.DRADevice"
_NUMERIC = (INT, UINT, DOUBLE)
_DEVICE_FIELDS: dict[str, Type] = {
    "driver": STRING,
    "attributes": ("map", STRING, ("map", STRING, ANY)),
    "capacity": ("map", STRING, ("map", STRING, QUANTITY)),
}
_ARITHMETIC = {"+": (INT, UINT, DOUBLE, STRING, BYTES), "-": _NUMERIC, "*": _NUMERIC, "/": _NUMERIC, "%": (INT, UINT)}
_CONVERSIONS: dict[str, tuple[Type, tuple[Type, ...]]] = {
    "int": (INT, (INT, UINT, DOUBLE, STRING)),
    "uint": (UINT, (INT, UINT, DOUBLE, STRING)),
    "double": (DOUBLE, (INT, UINT, DOUBLE, STRING)),
    "string": (STRING, (INT, UINT, DOUBLE, STRING, BYTES, BOOL)),
    "bool": (BOOL, (BOOL, STRING)),
    "bytes": (BYTES, (BYTES, STRING)),
}
# Global functions and member functions: name -> [(receiver or None, parameters, result)].
_Overload = tuple[Type | None, tuple[Type, ...], Type]
_FUNCTIONS: dict[str, list[_Overload]] = {
    "quantity": [(None, (STRING,), QUANTITY)],
    "isQuantity": [(None, (STRING,), BOOL)],
    "semver": [(None, (STRING,), SEMVER), (None, (STRING, BOOL), SEMVER)],
    "isSemver": [(None, (STRING,), BOOL), (None, (STRING, BOOL), BOOL)],
    "compareTo": [(QUANTITY, (QUANTITY,), INT), (SEMVER, (SEMVER,), INT)],
    "isGreaterThan": [(QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)],
    "isLessThan": [(QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)],
    "sign": [(None, (QUANTITY,), INT)],
    "isInteger": [(QUANTITY, (), BOOL)],
    "asInteger": [(QUANTITY, (), INT)],
    "asApproximateFloat": [(QUANTITY, (), DOUBLE)],
    "add": [(QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)],
    "sub": [(QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)],
    "major": [(SEMVER, (), INT)],
    "minor": [(SEMVER, (), INT)],
    "patch": [(SEMVER, (), INT)],
    "contains": [(STRING, (STRING,), BOOL)],
    "startsWith": [(STRING, (STRING,), BOOL)],
    "endsWith": [(STRING, (STRING,), BOOL)],
    "matches": [(STRING, (STRING,), BOOL), (None, (STRING, STRING), BOOL)],
    "size": [(None, (t,), INT) for t in (STRING, BYTES, ("list", DYN), ("map", DYN, DYN))]
    + [(t, (), INT) for t in (STRING, BYTES, ("list", DYN), ("map", DYN, DYN))],
}
_MACROS = ("all", "exists", "exists_one", "map", "filter")
SUPPORTED_FUNCTIONS = tuple(sorted({*_FUNCTIONS, *_CONVERSIONS, *_MACROS, "has", "dyn"}))
# Functions the API server's CEL environment for DRA selectors declares (k8s.io/apiserver
# pkg/cel/environment/base.go: ext.Strings, library.Lists, library.Regex, library.URLs, library.IP,
# library.CIDR, library.Format; cel-go's timestamps, durations and type()) that are not evaluated
# here: named as such, so a selector Kubernetes would admit is not reported as a typo.
KUBERNETES_ONLY_FUNCTIONS = frozenset({
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim", "join",
    "format", "quote", "reverse", "isSorted", "sum", "min", "max", "find", "findAll", "url", "isURL", "getScheme",
    "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery", "ip", "isIP", "family", "isUnspecified",
    "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "isCanonical", "cidr", "isCIDR",
    "containsIP", "containsCIDR", "masked", "prefixLength", "timestamp", "duration", "getFullYear", "getMonth",
    "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes", "getSeconds",
    "getMilliseconds", "type", "hasValue", "value", "orValue", "optMap", "optFlatMap", "transformList",
    "transformMap", "transformMapEntry",
})


_DYNAMIC = (DYN, ANY, FREE)
_SCALARS = (BOOL, INT, UINT, DOUBLE, NULL)
_TRAVERSAL_FACTOR = 0.1  # cel-go common.StringTraversalCostFactor
_NULLABLE = (QUANTITY, SEMVER)  # object types, which null is assignable to


def type_name(t: Type) -> str:
    if isinstance(t, tuple):
        return f"{t[0]}({', '.join(type_name(arg) for arg in t[1:])})"
    return DYN if t == FREE else t


def _assignable(actual: Type, wanted: Type) -> bool:
    """Could a value of static type ``actual`` be passed where ``wanted`` is declared?"""
    if actual in _DYNAMIC or wanted in _DYNAMIC or actual == wanted:
        return True
    if actual == NULL and wanted in _NULLABLE:
        return True
    if isinstance(actual, tuple) and isinstance(wanted, tuple) and actual[0] == wanted[0]:
        return all(_assignable(a, w) for a, w in zip(actual[1:], wanted[1:], strict=True))
    return False


def _same(a: Type, b: Type) -> bool:
    """cel-go's homogeneity of literal elements: the same type, except that an empty literal's
    element type unifies with anything (``[[1], []]`` is fine, ``[[1], [dyn(1)]]`` is not)."""
    if FREE in (a, b) or a == b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        return all(_same(x, y) for x, y in zip(a[1:], b[1:], strict=True))
    return False


def _receiver_fits(actual: Type | None, wanted: Type | None) -> bool:
    if actual is None or wanted is None:
        return actual is wanted
    return _assignable(actual, wanted)


def _sized(t: Type) -> bool:
    """Whether a value read from a container of this element type has a size cel-go knows."""
    return t not in (QUANTITY, SEMVER, DYN, FREE)


def _comparison_cost(left: _Typed, right: _Typed) -> int:
    """cel-go's estimate for ==, != and ordering of strings: the smaller known size, times the
    traversal factor; unbounded (past any limit) when neither size is known."""
    sizes = [side.size for side in (left, right) if side.sized]
    if not sizes:
        return MAX_COST + 1
    return int(min(sizes) * _TRAVERSAL_FACTOR + 0.999)


def _join(a: Type, b: Type) -> Type:
    """The type of ``c ? a : b`` (branches already assignable): their type, or the dynamic one."""
    if _same(a, b):
        return b if a == FREE or isinstance(a, tuple) and FREE in a else a
    return b if b in _DYNAMIC else a if a in _DYNAMIC else DYN


class _Typed(NamedTuple):
    """A node's static type and estimates (a tuple: a frozen dataclass's four `object.__setattr__`
    calls made type-checking the varied 1,000 x 10,000 benchmark fleet's 11,463 selectors cost
    0.14 CPU s, 0.12 s so, 2026-11-26)."""

    type: Type
    cost: int
    size: int  # most elements a list, map or string of this type can hold
    sized: bool = True
    """Whether cel-go's estimator knows a size (scalars, literals, device fields, attributes); it
    knows none for a quantity, a version, ``string()`` or a field of ``dyn``, so comparing two
    such values is estimated at an unbounded cost."""


class _Checker:
    def __init__(self, text: str) -> None:
        self.text = text
        self.scope: dict[str, Type] = {}

    def error(self, message: str, node: Node) -> SelectorError:
        if node.pos is None:
            return SelectorError(message)
        line, column = syntax.locate(self.text, node.pos.start)
        return SelectorError(message, column=column, line=line)

    def no_overload(self, function: str, node: Node, *types: Type) -> SelectorError:
        names = ", ".join(type_name(t) for t in types)
        return self.error(f"found no matching overload for '{function}' applied to '({names})'", node)

    def visit(self, node: Node) -> _Typed:  # noqa: C901 - one branch per node kind
        if isinstance(node, Literal):
            return _Typed(node.kind, 0, len(node.value) if node.kind in (STRING, BYTES) else 0)
        if isinstance(node, Ident):
            if node.name in self.scope:
                return _Typed(self.scope[node.name], 1, _UNKNOWN_SIZE)
            if node.name == "device":
                return _Typed(DEVICE, 1, 0)
            raise self.error(f"undeclared reference to '{node.name}' (the one variable of a selector is device)", node)
        if isinstance(node, Select):
            return self.select(node)
        if isinstance(node, Index):
            return self.index(node)
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Unary):
            operand = self.visit(node.operand)
            allowed = (BOOL,) if node.op == "!" else (INT, DOUBLE)
            if operand.type not in _DYNAMIC and operand.type not in allowed:
                raise self.no_overload(f"{node.op}_", node, operand.type)
            return _Typed(BOOL if node.op == "!" else operand.type, operand.cost + 1, 0)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Conditional):
            condition, then, otherwise = self.visit(node.condition), self.visit(node.then), self.visit(node.otherwise)
            if not _assignable(condition.type, BOOL) or not _assignable(then.type, otherwise.type):
                raise self.no_overload("_?_:_", node, condition.type, then.type, otherwise.type)
            return _Typed(_join(then.type, otherwise.type), condition.cost + max(then.cost, otherwise.cost) + 1,
                          max(then.size, otherwise.size), then.sized and otherwise.sized)
        if isinstance(node, ListLit):
            items = [self.visit(item) for item in node.items]
            element = self.homogeneous(items, node.items)
            return _Typed(("list", element), 10 + sum(i.cost for i in items), len(items))
        return self.map_literal(node)

    def map_literal(self, node: MapLit) -> _Typed:
        keys = [self.visit(k) for k, _ in node.entries]
        values = [self.visit(v) for _, v in node.entries]
        for key, (key_node, _) in zip(keys, node.entries, strict=True):
            if key.type not in (INT, UINT, BOOL, STRING, *_DYNAMIC):
                raise self.error(f"unsupported map key type: {type_name(key.type)}", key_node)
        key_type = self.homogeneous(keys, [k for k, _ in node.entries])
        value_type = self.homogeneous(values, [v for _, v in node.entries])
        return _Typed(("map", key_type, value_type), 30 + sum(t.cost for t in keys + values), len(keys))

    def homogeneous(self, items: list[_Typed], nodes: Any) -> Type:
        """The one type of a literal's elements (Kubernetes' HomogeneousAggregateLiterals)."""
        if not items:
            return FREE
        first = items[0].type
        for item, item_node in zip(items[1:], list(nodes)[1:], strict=True):
            if not _same(first, item.type):
                raise self.error(f"expected type '{type_name(first)}' but found '{type_name(item.type)}'", item_node)
            if first == FREE or isinstance(first, tuple) and FREE in first:
                first = item.type
        return first

    def select(self, node: Select) -> _Typed:
        operand = self.visit(node.operand)
        if operand.type == DEVICE:
            if node.field not in _DEVICE_FIELDS:
                raise self.error(f"undefined field '{node.field}'", node)
            return _Typed(_DEVICE_FIELDS[node.field], operand.cost, MAX_ELEMENTS)
        if operand.type in _DYNAMIC:
            return _Typed(DYN, operand.cost + 1, _UNKNOWN_SIZE, sized=False)
        if isinstance(operand.type, tuple) and operand.type[0] == "map" and operand.type[1] in (STRING, *_DYNAMIC):
            return _Typed(operand.type[2], operand.cost + 1, MAX_ELEMENTS, _sized(operand.type[2]))
        raise self.error(f"type '{type_name(operand.type)}' does not support field selection", node)

    def index(self, node: Index) -> _Typed:
        operand, index = self.visit(node.operand), self.visit(node.index)
        cost = operand.cost + index.cost + 1
        if operand.type in _DYNAMIC and index.type in (INT, UINT, STRING, BOOL, *_DYNAMIC):
            return _Typed(DYN, cost, _UNKNOWN_SIZE, sized=False)
        if isinstance(operand.type, tuple) and operand.type[0] == "list" and index.type in (INT, UINT, *_DYNAMIC):
            return _Typed(operand.type[1], cost, _UNKNOWN_SIZE, _sized(operand.type[1]))
        if isinstance(operand.type, tuple) and operand.type[0] == "map" and _assignable(index.type, operand.type[1]):
            return _Typed(operand.type[2], cost, MAX_ELEMENTS, _sized(operand.type[2]))
        raise self.no_overload("_[_]", node, operand.type, index.type)

    def binary(self, node: Binary) -> _Typed:
        left, right = self.visit(node.left), self.visit(node.right)
        cost = left.cost + right.cost + 1
        lt, rt = left.type, right.type
        if node.op in ("&&", "||"):
            if not (_assignable(lt, BOOL) and _assignable(rt, BOOL)):
                raise self.no_overload(f"_{node.op}_", node, lt, rt)
            return _Typed(BOOL, cost, 0)
        if node.op in ("==", "!="):
            if not (_assignable(lt, rt) or _assignable(rt, lt)):
                raise self.no_overload(f"_{node.op}_", node, lt, rt)
            # Kubernetes' estimator prices == between two quantities or two versions at 1; cel-go
            # prices every other equality by the smaller operand's size.
            if not (node.op == "==" and lt == rt and lt in (QUANTITY, SEMVER)):
                cost += _comparison_cost(left, right)
            return _Typed(BOOL, cost, 0)
        if node.op in ("<", "<=", ">", ">="):
            if QUANTITY in (lt, rt) or SEMVER in (lt, rt):
                texts = [self.text[p.start:p.end] for p in node.operands or ()]
                raise self.error(ordering_hint(node.op, type_name(lt), type_name(rt), *texts), node)
            # null < null passes: null is assignable to timestamps, which are ordered (it fails at run time).
            ordered = (lt in _NUMERIC and rt in _NUMERIC) or lt == rt and lt in (STRING, BYTES, BOOL, NULL)
            dynamic = lt in _DYNAMIC or rt in _DYNAMIC
            if not ordered and not (dynamic and {lt, rt} <= {*_DYNAMIC, *_NUMERIC, STRING, BYTES, BOOL}):
                raise self.no_overload(f"_{node.op}_", node, lt, rt)
            if lt == rt and lt in (STRING, BYTES):
                cost += _comparison_cost(left, right)
            return _Typed(BOOL, cost, 0)
        if node.op == "in":
            container = rt if isinstance(rt, tuple) else None
            if rt not in _DYNAMIC and not (container and _assignable(lt, container[1])):
                raise self.no_overload("@in", node, lt, rt)
            return _Typed(BOOL, cost + min(right.size, _UNKNOWN_SIZE), 0)
        return self.arithmetic(node, left, right, cost)

    def arithmetic(self, node: Binary, left: _Typed, right: _Typed, cost: int) -> _Typed:
        lt, rt = left.type, right.type
        if node.op == "+" and isinstance(lt, tuple) and lt[0] == "list" and _assignable(rt, ("list", DYN)):
            element = lt[1] if rt == lt else DYN
            return _Typed(("list", element), cost + left.size + right.size, left.size + right.size)
        allowed = _ARITHMETIC[node.op]
        if lt in _DYNAMIC or rt in _DYNAMIC:
            known = rt if lt in _DYNAMIC else lt
            is_list = isinstance(known, tuple) and known[0] == "list"
            if known not in _DYNAMIC and known not in allowed and not (node.op == "+" and is_list):
                raise self.no_overload(f"_{node.op}_", node, lt, rt)
            return _Typed(DYN if is_list else known, cost, left.size + right.size,
                          known in _SCALARS or left.sized and right.sized)
        if lt != rt or lt not in allowed:
            raise self.no_overload(f"_{node.op}_", node, lt, rt)
        return _Typed(lt, cost, left.size + right.size, lt in _SCALARS or left.sized and right.sized)

    def call(self, node: Call) -> _Typed:
        if node.target is None and node.function in ("has", "dyn"):
            return self.special(node)
        if node.target is not None and node.function in _MACROS:
            return self.comprehension(node)
        if isinstance(node.target, Ident) and node.target.name == "cel" and "cel" not in self.scope:
            raise self.error(f"cel.{node.function} is not supported here; write the sub-expression out", node)
        if isinstance(node.target, Ident) and node.target.name == "sets" and "sets" not in self.scope:
            raise self.error(f"sets.{node.function}() is a Kubernetes CEL function modelplane does not support; "
                             "write it with exists() or all()", node)
        if node.target is None and node.function in _CONVERSIONS:
            result, accepted = _CONVERSIONS[node.function]
            args = [self.visit(a) for a in node.args]
            if len(args) != 1 or not any(_assignable(args[0].type, t) for t in accepted):
                raise self.no_overload(node.function, node, *(a.type for a in args))
            return _Typed(result, args[0].cost + 1, _UNKNOWN_SIZE, result in _SCALARS)
        if node.function not in _FUNCTIONS:
            raise self.error(unsupported_function(node.function), node)
        target = self.visit(node.target) if node.target is not None else None
        args = [self.visit(a) for a in node.args]
        receiver = target.type if target is not None else None
        results = {
            result for wanted_receiver, params, result in _FUNCTIONS[node.function]
            if _receiver_fits(receiver, wanted_receiver)
            and len(params) == len(args) and all(_assignable(a.type, p) for a, p in zip(args, params, strict=True))
        }
        if not results:
            types = ([receiver] if receiver is not None else []) + [a.type for a in args]
            error = self.no_overload(node.function, node, *types)
            shapes = {wanted is None for wanted, _, _ in _FUNCTIONS[node.function]}
            if shapes == {target is not None}:  # a function called as a method, or the reverse
                hint = (f"{node.function} is a function, not a method: write {node.function}(x)" if target is not None
                        else f"{node.function} is a method: write x.{node.function}()")
                error = SelectorError(f"{error.message} ({hint})", column=error.column, line=error.line)
            raise error
        if node.function == "matches":
            self.pattern(node.args[-1])
        cost = 1 + sum(a.cost for a in args) + (target.cost if target else 0)
        result = results.pop() if len(results) == 1 else DYN
        return _Typed(result, cost, _UNKNOWN_SIZE, result in _SCALARS)

    def pattern(self, node: Node) -> None:
        """A literal pattern must be RE2, as cel-go's ValidateRegexLiterals checks it."""
        if isinstance(node, Literal) and node.kind == STRING:
            problem = pattern_problem(str(node.value))
            if problem is not None:
                raise self.error(f"invalid matches argument: {problem}", node)

    def special(self, node: Call) -> _Typed:
        if len(node.args) != 1:
            raise self.no_overload(node.function, node, *(self.visit(a).type for a in node.args))
        if node.function == "has" and not isinstance(node.args[0], Select):
            raise self.error("invalid argument to has() macro", node)
        argument = self.visit(node.args[0])
        if node.function == "has":
            return _Typed(BOOL, argument.cost, 0)
        return _Typed(DYN, argument.cost, argument.size, argument.sized)

    def comprehension(self, node: Call) -> _Typed:
        if node.target is None:
            raise InvariantError(f"the parser gives a {node.function}() comprehension a target")
        if len(node.args) != 2 or not isinstance(node.args[0], Ident):
            raise self.error(f"{node.function}() takes a variable name and an expression", node)
        target = self.visit(node.target)
        if target.type == DYN:
            element: Type = DYN
        elif isinstance(target.type, tuple) and target.type[0] in ("list", "map"):
            element = target.type[1]
        else:
            raise self.error(f"expression of type '{type_name(target.type)}' cannot be the range of a "
                             "comprehension (must be list, map, or dynamic)", node)
        name = node.args[0].name
        saved = self.scope.get(name)
        self.scope[name] = element
        try:
            body = self.visit(node.args[1])
        finally:
            if saved is None:
                del self.scope[name]
            else:
                self.scope[name] = saved
        if node.function in ("all", "exists", "exists_one", "filter") and not _assignable(body.type, BOOL):
            raise self.error(f"{node.function}() needs a bool expression, not {type_name(body.type)}", node.args[1])
        cost = target.cost + target.size * (body.cost + 2)
        if node.function == "map":
            return _Typed(("list", body.type), cost, target.size, target.sized)
        if node.function == "filter":
            return _Typed(("list", element), cost, target.size, target.sized)
        return _Typed(BOOL, cost, 0)


def check(ast: Node, text: str) -> int:
    """Type-check a parsed selector as Kubernetes' CEL checker would; return its estimated cost."""
    result = _Checker(text).visit(ast)
    if result.type not in (BOOL, ANY):
        raise SelectorError(f"must evaluate to bool or the unknown type, not {type_name(result.type)}")
    if result.cost > MAX_COST:
        raise SelectorError(
            f"too complex, exceeds cost limit (estimated cost {result.cost}, at most {MAX_COST}): "
            "nested comprehensions multiply; flatten them or split the selector"
        )
    return result.cost


def unsupported_function(name: str) -> str:
    """Why a call to `name` is rejected: a Kubernetes function modelplane does not evaluate, or none at all."""
    supported = ", ".join(SUPPORTED_FUNCTIONS)
    if name in KUBERNETES_ONLY_FUNCTIONS:
        return (f"{name}() is a Kubernetes CEL function modelplane does not support; write the selector with the "
                f"supported functions: {supported}")
    return f"undeclared reference to '{name}': no such function; the supported functions are: {supported}"
