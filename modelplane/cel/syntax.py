"""The AST of a selector, and cel-python's grammar as the parser of last resort and of its interpreter.

Contract: the node classes (``Literal``, ``Ident``, ``Select``, ...) are the AST every other module
works on; ``parser.parse`` builds it. Here, ``parse_tree(text)`` parses with cel-python's own
``cel.lark`` grammar (so what parses here is exactly what cel-python parses) into the tree
cel-python's interpreter needs, and ``convert(text, tree)`` turns that tree into the AST, for the
selectors too deep for the hand-written parser. ``literal`` reads a literal token, for both.

Invariants:
- The AST is the lark tree without its single-child grammar layers. Node positions are character
  offsets: tokens always carry them, tree nodes only when parsed with positions.
- The AST means what cel-go's parser makes of the text: chains of ``&&`` and ``||`` are balanced
  trees, as cel-go builds them (so a chain as long as 10 KiB allows nests only a dozen levels), and
  a run of ``!`` or of ``-`` keeps only its parity (``!!x`` is ``x``). A number ending in ``.`` is
  refused, as cel-go's lexer refuses it.
- The grammar is read once from cel-python's package, the only file this package reads.
- Work is bounded before any recursion: text longer than Kubernetes' 10 KiB limit is refused
  unparsed, and nesting is measured iteratively with cel-go's two limits (parser.go, default
  ``maxRecursionDepth`` 250, which Kubernetes does not change): no grammar rule may be entered
  more than 250 times within itself ("expression recursion limit exceeded: 250": nested
  parentheses, calls, lists, ``?:`` else-branches, operands), and no path may pass more than 250
  operators, selections, calls and indexes ("max recursion depth exceeded").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import celbytes, celstr
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.tree import Meta

from modelplane.cel.errors import SelectorError

ParseTree = lark.Tree[lark.Token]

MAX_LENGTH_BYTES = 10 * 1024  # CELSelectorExpressionMaxLength, pkg/apis/resource/types.go
MAX_RECURSION = 250  # cel-go parser/parser.go: maxRecursionDepth's default, which Kubernetes keeps


@dataclass(frozen=True, slots=True)
class Pos:
    """Character offsets of a node (or of an operator) in the source text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any  # a celpy value (IntType, StringType, ...) or None for null
    kind: str  # int, uint, double, string, bytes, bool, null
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Ident:
    name: str
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Select:
    operand: Node
    field: str
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Index:
    operand: Node
    index: Node
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    target: Node | None  # the receiver of a method call
    args: tuple[Node, ...]
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "!" or "-"
    operand: Node
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # || && == != < <= > >= in + - * / %
    left: Node
    right: Node
    pos: Pos | None  # the operator's own position
    operands: tuple[Pos, Pos] | None = None  # both operands' full extents, for a rewrite hint


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: Node
    then: Node
    otherwise: Node
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple[Node, ...]
    pos: Pos | None


@dataclass(frozen=True, slots=True)
class MapLit:
    entries: tuple[tuple[Node, Node], ...]
    pos: Pos | None


Node = Literal | Ident | Select | Index | Call | Unary | Binary | Conditional | ListLit | MapLit

_BINARY = {
    "conditionalor": "||", "conditionaland": "&&",
    "relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
    "relation_eq": "==", "relation_ne": "!=", "relation_in": "in",
    "addition_add": "+", "addition_sub": "-",
    "multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%",
}  # fmt: skip


@functools.cache
def _parser() -> lark.Lark:
    """cel-python's grammar, built once per process (only deep selectors and cel-python's
    interpreter need it)."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    return lark.Lark(grammar, parser="lalr", start="expr", g_regex_flags=re.M,
                     lexer_callbacks={"IDENT": _keyword}, propagate_positions=True, maybe_placeholders=False,
                     priority="invert")


def _keyword(token: lark.Token) -> lark.Token:
    """cel-python's reading of `true` and `false` (its CELParser.ambiguous_literals), keeping the
    token's position."""
    if token.value in ("true", "false"):
        return lark.Token.new_borrow_pos("BOOL_LIT", token.value, token)
    return token


def check_length(text: str) -> None:
    if len(text.encode()) > MAX_LENGTH_BYTES:
        raise SelectorError(
            f"Too long: may not be more than {MAX_LENGTH_BYTES} bytes (the expression has "
            f"{len(text.encode())}); split it into several selectors"
        )


def parse_tree(text: str) -> ParseTree:
    """The cel-python parse tree, logic chains balanced and nesting checked as cel-go checks it."""
    check_length(text)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(error, error.line, error.column) from None
    _balance_logic(tree)
    _check_nesting(tree)
    return tree


def convert(text: str, tree: ParseTree) -> Node:
    """The AST of a parse tree of `text`."""
    return _Converter(text).convert(tree)


def locate(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _syntax_error(error: UnexpectedInput, line: int | None, column: int | None) -> SelectorError:
    if isinstance(error, UnexpectedEOF) or isinstance(error, UnexpectedToken) and error.token.type == "$END":
        what = "unexpected end of expression"
    elif isinstance(error, UnexpectedToken):
        what = f"unexpected {str(error.token)!r}"
    elif isinstance(error, UnexpectedCharacters):
        what = f"unexpected character {error.char!r}"
    else:
        what = "invalid expression"
    return SelectorError(f"Syntax error: {what}", column=column if column and column > 0 else None,
                         line=line if line and line > 0 else None)


_LOGIC = ("conditionalor", "conditionaland")


def _balance_logic(tree: ParseTree) -> None:
    """Rebuild every ``&&``/``||`` chain (a left-deep spine in the grammar) as the balanced tree
    cel-go's parser makes, in place. The result is the same (both operators are commutative over
    errors), and nothing downstream recurses once per term."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.data in _LOGIC and len(node.children) == 2:
            terms: list[Any] = []
            link = node
            while link.data == node.data and len(link.children) == 2:
                terms.append(link.children[1])
                link = cast(ParseTree, link.children[0])
            terms.append(link)
            terms.reverse()
            if len(terms) > 2:
                node.children = list(_balanced(node.data, terms, 0, len(terms) - 2).children)
            stack.extend(terms)
        else:
            stack.extend(child for child in node.children if isinstance(child, lark.Tree))


def _balanced(data: str, terms: list[Any], low: int, high: int) -> ParseTree:
    """cel-go's logicManager.balancedTree over the operators low..high (term i is left of operator i)."""
    middle = (low + high + 1) // 2
    left = terms[middle] if middle == low else _balanced(data, terms, low, middle - 1)
    right = terms[middle + 1] if middle + 1 == high + 1 else _balanced(data, terms, middle + 1, high)
    return lark.Tree(data, [left, right], _span(left, right))


def _span(left: Any, right: Any) -> Meta | None:
    if left.meta.empty or right.meta.empty:
        return None
    meta = Meta()
    meta.empty = False
    meta.line, meta.column, meta.start_pos = left.meta.line, left.meta.column, left.meta.start_pos
    meta.end_line, meta.end_column, meta.end_pos = right.meta.end_line, right.meta.end_column, right.meta.end_pos
    return meta


_RELATION_OPS = frozenset(("relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne",
                           "relation_in"))
_ADDITION_OPS = frozenset(("addition_add", "addition_sub"))
_VISITED = frozenset(("member_dot", "member_dot_arg", "member_index"))


def _check_nesting(tree: ParseTree) -> None:
    """cel-go's two nesting limits, measured without recursion on the grammar's tree.

    The parser's listener counts how deep each grammar rule is entered within itself: ``expr``
    once per parenthesis, call argument, list element, index or ``?:`` else-branch; ``relation``
    and ``calc`` also once per right operand, since cel-go's grammar parses a right operand by
    entering the rule again (a left operand continues the same entry). Its visitor counts the
    operators (other than ``&&``/``||``), ``?:``, selections, calls on a receiver and indexes
    on each path."""
    deepest_rule = deepest_path = 0
    # node, then entries of expr, relation and calc, and visited nodes, on the path to it; and
    # whether the node continues its parent's entry of the same rule (a left operand).
    stack: list[tuple[ParseTree, int, int, int, int, bool]] = [(tree, 0, 0, 0, 0, False)]
    while stack:
        node, exprs, relations, calcs, visited, continued = stack.pop()
        data, children = node.data, node.children
        binary = len(children) == 2
        if data == "expr":
            exprs += 1
            visited += len(children) == 3
        elif data == "relation":
            relations += not continued
            visited += binary
        elif data == "addition":
            calcs += not continued
            visited += binary
        elif data == "multiplication" or data in _VISITED:
            visited += binary or data in _VISITED
        deepest_rule = max(deepest_rule, exprs, relations, calcs)
        deepest_path = max(deepest_path, visited)
        for index, child in enumerate(children):
            if not isinstance(child, lark.Tree):
                continue
            right = binary and index == 1
            stack.append((child, exprs,
                          relations + (data == "relation" and right),
                          calcs + (data in ("addition", "multiplication") and right),
                          visited, data in _RELATION_OPS or data in _ADDITION_OPS))
    if deepest_rule > MAX_RECURSION:
        raise SelectorError(f"expression recursion limit exceeded: {MAX_RECURSION} (cel-go's parser limit: at most "
                            f"{MAX_RECURSION} nested parentheses, calls, lists or operands); split the selector")
    if deepest_path > MAX_RECURSION:
        raise _too_long_path()


def _too_long_path() -> SelectorError:
    return SelectorError(f"max recursion depth exceeded (cel-go's parser limit: at most {MAX_RECURSION} chained "
                         "operators, selections, calls and indexes on one path); split the selector")


def check_path_depth(ast: Node) -> None:
    """cel-go's visitor limit on an AST: the same count `_check_nesting` makes on a parse tree."""
    stack: list[tuple[Node, int]] = [(ast, 0)]
    while stack:
        node, visited = stack.pop()
        visited += (isinstance(node, (Conditional, Select, Index)) or isinstance(node, Call) and node.target is not None
                    or isinstance(node, Binary) and node.op not in ("&&", "||"))
        if visited > MAX_RECURSION:
            raise _too_long_path()
        stack.extend((child, visited) for child in children(node))


def children(node: Node) -> list[Node]:
    if isinstance(node, (Select, Unary)):
        return [node.operand]
    if isinstance(node, Index):
        return [node.operand, node.index]
    if isinstance(node, Binary):
        return [node.left, node.right]
    if isinstance(node, Conditional):
        return [node.condition, node.then, node.otherwise]
    if isinstance(node, Call):
        return ([node.target] if node.target is not None else []) + list(node.args)
    if isinstance(node, ListLit):
        return list(node.items)
    if isinstance(node, (Literal, Ident)):
        return []
    return [part for entry in node.entries for part in entry]


def balanced(op: str, terms: list[Node], ops: list[Pos]) -> Node:
    """A chain of `&&` or `||` as cel-go's logicManager.balancedTree builds it (term i is left of
    operator i)."""
    def build(low: int, high: int) -> Node:
        middle = (low + high + 1) // 2
        left = terms[middle] if middle == low else build(low, middle - 1)
        right = terms[middle + 1] if middle == high else build(middle + 1, high)
        return Binary(op, left, right, ops[middle])

    return build(0, len(ops) - 1)


class _Converter:
    """Lark tree to AST; positions are offsets, present only when the tree recorded them."""

    def __init__(self, text: str) -> None:
        self.text = text

    def convert(self, tree: ParseTree) -> Node:  # noqa: C901 - one branch per grammar rule
        while len(tree.children) == 1 and tree.data in _PASS_THROUGH:
            tree = cast(ParseTree, tree.children[0])
        data = tree.data
        children: list[Any] = tree.children  # trees and tokens, as the grammar rule fixes
        if data == "expr":
            condition, then, otherwise = (self.convert(c) for c in children)
            return Conditional(condition, then, otherwise, _pos(tree))
        if data in ("conditionalor", "conditionaland"):
            op = _BINARY[data]
            left, right = children
            return Binary(op, self.convert(left), self.convert(right), self._between(left, right, op))
        if data in ("relation", "addition", "multiplication"):
            op_tree, right = children
            op = _BINARY[op_tree.data]
            left = op_tree.children[0]
            op_pos, left_pos, right_pos = _pos(op_tree), _pos(left), _pos(right)
            if op_pos is None or left_pos is None or right_pos is None:
                return Binary(op, self.convert(left), self.convert(right), None)
            pos = Pos(op_pos.end - len(op), op_pos.end)
            return Binary(op, self.convert(left), self.convert(right), pos, (left_pos, right_pos))
        if data == "unary":
            return self._unary(tree)
        if data == "member_dot":
            return Select(self.convert(children[0]), str(children[1]), _pos(children[1]))
        if data == "member_dot_arg":
            args = self.convert_all(children[2]) if len(children) == 3 else ()
            return Call(str(children[1]), self.convert(children[0]), args, _pos(children[1]))
        if data == "member_index":
            return Index(self.convert(children[0]), self.convert(children[1]), _pos(tree))
        if data == "ident_arg":
            args = self.convert_all(children[1]) if len(children) == 2 else ()
            return Call(str(children[0]), None, args, _pos(children[0]))
        if data == "ident":
            return Ident(str(children[0]), _pos(children[0]))
        if data == "paren_expr":
            return self.convert(children[0])
        if data == "list_lit":
            return ListLit(self.convert_all(children[0]) if children else (), _pos(tree))
        if data == "map_lit":
            items = self.convert_all(children[0]) if children else ()
            return MapLit(tuple(zip(items[0::2], items[1::2], strict=True)), _pos(tree))
        if data == "literal":
            return self._literal(cast(lark.Token, children[0]))
        # member_object (message construction) and dot_ident (".name" root lookups) need protobuf
        # types, which a device selector has none of.
        raise self.error("message construction and leading-dot names are not supported in a device selector",
                         _pos(tree))

    def convert_all(self, tree: ParseTree) -> tuple[Node, ...]:
        return tuple(self.convert(cast(ParseTree, child)) for child in tree.children)

    def error(self, message: str, pos: Pos | None) -> SelectorError:
        if pos is None:
            return SelectorError(message)
        line, column = locate(self.text, pos.start)
        return SelectorError(message, column=column, line=line)

    def _between(self, left: ParseTree, right: ParseTree, op: str) -> Pos | None:
        left_pos, right_pos = _pos(left), _pos(right)
        if left_pos is None or right_pos is None:
            return None
        start = self.text.find(op, left_pos.end, right_pos.start)
        return Pos(start, start + len(op))

    def _unary(self, tree: ParseTree) -> Node:
        """A run of ``!`` or of ``-`` (cel-go's grammar allows no mix): an even run is dropped, an
        odd one is a single operator, as cel-go's VisitLogicalNot and VisitNegate do."""
        ops: list[ParseTree] = []
        operand = tree
        while operand.data == "unary" and len(operand.children) == 2:
            ops.append(cast(ParseTree, operand.children[0]))
            operand = cast(ParseTree, operand.children[1])
        mixed = next((op for op in ops if op.data != ops[0].data), None)
        if mixed is not None:
            raise self.error(f"Syntax error: unexpected {'!' if mixed.data == 'unary_not' else '-'!r} "
                             "(a run of '!' or '-' cannot mix them; use parentheses)", _pos(mixed))
        if len(ops) % 2 == 0:
            return self.convert(operand)
        return Unary("!" if ops[0].data == "unary_not" else "-", self.convert(operand), _pos(tree))

    def _literal(self, token: lark.Token) -> Literal:
        try:
            return literal(token.type, token.value, _pos(token))
        except ValueError as error:
            raise self.error(str(error), _pos(token)) from None


def literal(kind: str, text: str, pos: Pos | None) -> Literal:
    """A literal token's value (kinds as cel-python's grammar names them); ValueError says why not."""
    value, name = _literal_value(kind, text)
    return Literal(value, name, pos)


@functools.lru_cache(maxsize=1 << 12)
def _literal_value(kind: str, text: str) -> tuple[Any, str]:
    """The celpy value and CEL type of a literal token; memoized, the values being immutable and
    a fleet's selectors repeating their literals: building an `IntType` wraps a range check in
    `functools.wraps` each time. The varied 1,000 x 10,000 benchmark fleet's 11,463 selectors
    compiled in 0.86 CPU s without the memo, 0.78 s with it (2026-11-26)."""
    if kind == "FLOAT_LIT" and _BARE_POINT.search(text):
        raise ValueError(f"Syntax error: {text} is not a number: CEL needs a digit after the '.'")
    try:
        if kind == "INT_LIT":
            return celtypes.IntType(text), "int"
        if kind == "UINT_LIT":
            return celtypes.UintType(text[:-1]), "uint"
        if kind == "FLOAT_LIT":
            return celtypes.DoubleType(text), "double"
        if kind == "STRING_LIT" and "\\" not in text and text[0] in "\"'":
            return celtypes.StringType(text[1:-1]), "string"  # celstr, minus its per-char scan
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return celstr(lark.Token(kind, text)), "string"
        if kind == "BYTES_LIT":
            return celbytes(lark.Token(kind, text)), "bytes"
        if kind == "BOOL_LIT":
            return celtypes.BoolType(text == "true"), "bool"
    except ValueError:
        raise ValueError(f"invalid {kind.split('_')[0].lower()} literal {text}") from None
    return None, "null"


_BARE_POINT = re.compile(r"\.(?![0-9])")

_PASS_THROUGH = frozenset(
    ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member", "primary")
)


def _pos(node: ParseTree | lark.Token) -> Pos | None:
    if isinstance(node, lark.Token):
        return None if node.start_pos is None or node.end_pos is None else Pos(node.start_pos, node.end_pos)
    meta = node.meta
    return None if meta.empty or getattr(meta, "start_pos", None) is None else Pos(meta.start_pos, meta.end_pos)
