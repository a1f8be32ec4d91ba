"""Parsing a selector: text -> the AST of `syntax`, by hand for all but pathologically deep text.

Contract: ``parse(text)`` returns the AST of a CEL expression or raises ``SelectorError`` with a
1-based line and column. Text that nests brackets and ``?:`` at most ``SHALLOW`` levels deep (every
selector a fleet uses in practice) is parsed here, in one pass: a few tens of microseconds instead
of lark's few hundred, and lark's tables are never built. Deeper text goes to ``syntax``'s lark
path, which measures nesting without recursion. Both give the same AST, values and positions for
the same text (tests/cel/test_parser.py holds them to it).

The grammar is cel-go's precedence (``?:``, ``||``, ``&&``, relations, ``+ -``, ``* / %``, unary,
member access, primary), tokens as cel-python's grammar lexes them (a ``-`` right before a number
where an operand starts is the number's sign); ``&&``/``||`` chains are balanced as cel-go builds
them; a run of ``!`` or ``-`` keeps its parity. The visitor limit of cel-go (250 operators,
selections, calls and indexes on one path) is checked on the AST, and only for text of more than
250 tokens: every node it counts has a token of its own (its operator, ``.``, ``[`` or ``?``), so
shorter text cannot reach it (walking every AST cost the varied 1,000 x 10,000 benchmark fleet's
11,463 selectors 0.08 CPU s). The listener limit cannot be reached within ``SHALLOW`` levels.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from modelplane.cel.errors import SelectorError
from modelplane.cel.syntax import (
    MAX_RECURSION,
    Binary,
    Call,
    Conditional,
    Ident,
    Index,
    ListLit,
    MapLit,
    Node,
    Pos,
    Select,
    Unary,
    balanced,
    check_length,
    check_path_depth,
    convert,
    literal,
    locate,
    parse_tree,
)

SHALLOW = 48
"""Bracket and ``?:`` nesting handled here; deeper text goes to the lark path."""

_STRING = r'''(?:"""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\'|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')'''
_TOKENS = re.compile(rf"""
    (?P<space>[\t\n\f\r\ ]+|//[^\n]*)
  | (?P<BYTES_LIT>[bB][rR]?{_STRING})
  | (?P<STRING_LIT>[rR]?{_STRING})
  | (?P<number>(?:0x[0-9a-fA-F]+|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?
               |[0-9]+[eE][+-]?[0-9]+|[0-9]+)[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[<>+\-*/%!?:.,()\[\]{{}}])
  | (?P<bad>[\s\S])
""", re.X)
_LEVELS = {**dict.fromkeys(("<", "<=", ">", ">=", "==", "!=", "in"), 0), "+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
"""The binary operators below `&&` and their precedence: relations, additions, multiplications."""
_OPERATORS = ("||", "&&", "==", "!=", "<=", ">=", *"<>+-*/%!?:.,()[]{}")
_WORDS = {"true": "BOOL_LIT", "false": "BOOL_LIT", "null": "NULL_LIT", "in": "in", **{op: op for op in _OPERATORS}}
"""The kind of an operator or a word that is not an identifier."""


class _Token(NamedTuple):
    kind: str  # an operator's text, "ident", a literal kind (INT_LIT, ...), or "end"
    text: str
    start: int
    end: int


def parse(text: str) -> Node:
    check_length(text)
    tokens = _tokenize(text)
    if tokens is None:
        return convert(text, parse_tree(text))
    node = _Parser(text, tokens).parse()
    if len(tokens) > MAX_RECURSION:  # each node the limit counts has a token of its own
        check_path_depth(node)
    return node


def _tokenize(text: str) -> list[_Token] | None:
    """The tokens of `text` then an "end" token, or None when it nests deeper than `SHALLOW`.

    One pass of `finditer`: the last alternative takes any character the others refuse, so the
    matches are contiguous and the first `bad` one is where the text stops being CEL. Nesting is
    only counted when the text holds more than `SHALLOW` opening brackets and `?` (it cannot nest
    deeper than it has). Tokenizing the varied 1,000 x 10,000 benchmark fleet's 11,463 selectors
    took 0.19 CPU s with a `match` loop, 0.16 s so (2026-11-26)."""
    tokens: list[_Token] = []
    for found in _TOKENS.finditer(text):
        group = found.lastgroup
        if group == "space":
            continue
        value = found.group()
        if group == "ident" or group == "op":
            kind = _WORDS.get(value, "ident")
        elif group == "number":
            kind = _number_kind(value)
        elif group == "STRING_LIT":
            kind = "MLSTRING_LIT" if value.lstrip("rR")[:3] in ('"""', "'''") else group
        elif group == "bad":
            line, column = locate(text, found.start())
            raise SelectorError(f"Syntax error: unexpected character {value!r}", line=line, column=column)
        else:
            kind = "BYTES_LIT"
        start, end = found.span()
        tokens.append(_Token(kind, value, start, end))
    last = tokens[-1].start if tokens else 0  # lark places the end at the last token; so do we
    tokens.append(_Token("end", "", last, last))
    if sum(map(text.count, "([{?")) <= SHALLOW:
        return tokens
    depth = deepest = questions = 0
    for token in tokens:
        if token.kind in ("(", "[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token.kind in (")", "]", "}"):
            depth -= 1
        elif token.kind == "?":
            questions += 1
    return tokens if deepest + questions <= SHALLOW else None


def _number_kind(text: str) -> str:
    if text[-1] in "uU":
        return "UINT_LIT"
    if text.startswith("0x") or not any(c in text for c in ".eE"):
        return "INT_LIT"
    return "FLOAT_LIT"


class _Parsed(NamedTuple):
    node: Node
    start: int
    end: int


class _Parser:
    def __init__(self, text: str, tokens: list[_Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.at = 0

    def parse(self) -> Node:
        parsed = self.expr()
        if self.tokens[self.at].kind != "end":
            raise self.unexpected()
        return parsed.node

    def take(self, kind: str) -> _Token:
        token = self.tokens[self.at]
        if token.kind != kind:
            raise self.unexpected()
        self.at += 1
        return token

    def unexpected(self) -> SelectorError:
        token = self.tokens[self.at]
        line, column = locate(self.text, token.start)
        what = "unexpected end of expression" if token.kind == "end" else f"unexpected {token.text!r}"
        return SelectorError(f"Syntax error: {what}", line=line, column=column)

    def expr(self) -> _Parsed:
        condition = self.logic("||")
        if self.tokens[self.at].kind != "?":
            return condition
        self.at += 1
        then = self.logic("||")
        self.take(":")
        otherwise = self.expr()
        return _Parsed(Conditional(condition.node, then.node, otherwise.node, Pos(condition.start, otherwise.end)),
                       condition.start, otherwise.end)

    def logic(self, op: str) -> _Parsed:
        """A chain of `||` (of `&&` terms) or of `&&` (of operations), balanced as cel-go builds it."""
        terms, ops = [self.logic("&&") if op == "||" else self.operation(0)], []
        while self.tokens[self.at].kind == op:
            ops.append(self.tokens[self.at])
            self.at += 1
            terms.append(self.logic("&&") if op == "||" else self.operation(0))
        if not ops:
            return terms[0]
        node = balanced(op, [t.node for t in terms], [Pos(o.start, o.end) for o in ops])
        return _Parsed(node, terms[0].start, terms[-1].end)

    def operation(self, lowest: int) -> _Parsed:
        """Relations, `+ -` and `* / %` (`_LEVELS`), each level left-associative, by precedence
        climbing: an operand then operators of `lowest` level or above, each right operand taking
        only the levels above its operator's. One call per operand instead of one per level (and
        the token read in place rather than through a property) took parsing the varied 1,000 x
        10,000 benchmark fleet's 11,463 selectors (tokens included) from 0.41 to 0.35 CPU s (2026-11-26)."""
        left = self.unary()
        while True:
            op = self.tokens[self.at]
            level = _LEVELS.get(op.kind, -1)
            if level < lowest:
                return left
            self.at += 1
            right = self.operation(level + 1)
            left = _Parsed(Binary(op.text, left.node, right.node, Pos(op.start, op.end),
                                  (Pos(left.start, left.end), Pos(right.start, right.end))), left.start, right.end)

    def unary(self) -> _Parsed:
        ops: list[_Token] = []
        while self.tokens[self.at].kind in ("!", "-") and not self.signs_number():
            ops.append(self.tokens[self.at])
            self.at += 1
        operand = self.member()
        if not ops:
            return operand
        mixed = next((op for op in ops if op.kind != ops[0].kind), None)
        if mixed is not None:
            line, column = locate(self.text, mixed.start)
            raise SelectorError(f"Syntax error: unexpected {mixed.text!r} (a run of '!' or '-' cannot mix them; "
                                "use parentheses)", line=line, column=column)
        if len(ops) % 2 == 0:
            return _Parsed(operand.node, ops[0].start, operand.end)
        return _Parsed(Unary(ops[0].kind, operand.node, Pos(ops[0].start, operand.end)), ops[0].start, operand.end)

    def signs_number(self) -> bool:
        """A `-` right before a number, where an operand starts, is the number's sign."""
        sign, after = self.tokens[self.at], self.tokens[self.at + 1]
        return sign.kind == "-" and after.start == sign.end and after.kind in ("INT_LIT", "UINT_LIT", "FLOAT_LIT")

    def member(self) -> _Parsed:
        parsed = self.primary()
        while True:
            kind = self.tokens[self.at].kind
            if kind == ".":
                self.at += 1
                name = self.take("ident")
                if self.tokens[self.at].kind == "(":
                    args, end = self.arguments(")")
                    parsed = _Parsed(Call(name.text, parsed.node, args, Pos(name.start, name.end)), parsed.start, end)
                else:
                    parsed = _Parsed(Select(parsed.node, name.text, Pos(name.start, name.end)), parsed.start, name.end)
            elif kind == "[":
                self.at += 1
                index = self.expr()
                end = self.take("]").end
                parsed = _Parsed(Index(parsed.node, index.node, Pos(parsed.start, end)), parsed.start, end)
            elif kind == "{":
                raise self.unsupported(parsed.start)
            else:
                return parsed

    def primary(self) -> _Parsed:
        token = self.tokens[self.at]
        kind = token.kind
        if kind == "ident":
            self.at += 1
            if self.tokens[self.at].kind == "(":
                args, end = self.arguments(")")
                return _Parsed(Call(token.text, None, args, Pos(token.start, token.end)), token.start, end)
            return _Parsed(Ident(token.text, Pos(token.start, token.end)), token.start, token.end)
        if kind == "(":
            self.at += 1
            inner = self.expr()
            end = self.take(")").end
            return _Parsed(inner.node, token.start, end)
        if kind == "[":
            items, end = self.arguments("]")
            return _Parsed(ListLit(items, Pos(token.start, end)), token.start, end)
        if kind == "{":
            return self.map_literal()
        if kind == "." and self.tokens[self.at + 1].kind == "ident":
            raise self.unsupported(token.start)
        if kind == "-" and self.signs_number():
            number = self.tokens[self.at + 1]
            self.at += 2
            return self.literal(number.kind, token.text + number.text, token.start, number.end)
        if kind.endswith("_LIT"):
            self.at += 1
            return self.literal(kind, token.text, token.start, token.end)
        raise self.unexpected()

    def literal(self, kind: str, text: str, start: int, end: int) -> _Parsed:
        try:
            return _Parsed(literal(kind, text, Pos(start, end)), start, end)
        except ValueError as error:
            line, column = locate(self.text, start)
            raise SelectorError(str(error), line=line, column=column) from None

    def arguments(self, close: str) -> tuple[tuple[Node, ...], int]:
        """`(` or `[`, expressions separated by commas, then `close`."""
        self.at += 1
        items: list[Node] = []
        if self.tokens[self.at].kind != close:
            items.append(self.expr().node)
            while self.tokens[self.at].kind == ",":
                self.at += 1
                items.append(self.expr().node)
        return tuple(items), self.take(close).end

    def map_literal(self) -> _Parsed:
        start = self.take("{").start
        entries: list[tuple[Node, Node]] = []
        if self.tokens[self.at].kind != "}":
            while True:
                key = self.expr().node
                self.take(":")
                entries.append((key, self.expr().node))
                if self.tokens[self.at].kind != ",":
                    break
                self.at += 1
        end = self.take("}").end
        return _Parsed(MapLit(tuple(entries), Pos(start, end)), start, end)

    def unsupported(self, offset: int) -> SelectorError:
        line, column = locate(self.text, offset)
        return SelectorError("message construction and leading-dot names are not supported in a device selector",
                             line=line, column=column)
