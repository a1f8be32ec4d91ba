"""The hand-written parser against cel-python's grammar: the same AST (nodes, values, positions)
for every text both accept, and a rejection where cel-python's grammar rejects.

`parser.parse` handles every selector up to `parser.SHALLOW` levels of nesting; `syntax.parse_tree`
+ `syntax.convert` (lark, cel-python's own grammar) is the reference, and the path deeper text takes.
Hypothesis generates well-formed expressions over the whole grammar (literals of every kind,
signs next to numbers, runs of `!` and `-`, member calls, indexes, lists, maps, ternaries,
parentheses, every operator) and token soup that is mostly malformed. Where cel-go and cel-python's
grammar differ, the parser follows cel-go: `in` is never an identifier (`a.in` is a syntax error),
and `in` written against a name or number is part of it, as in cel-go's lexer (`0in0` is `0` then
the identifier `in0`, a syntax error, where lark reads `0 in 0`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.cel import parser, syntax
from modelplane.cel.errors import SelectorError
from modelplane.cel.syntax import Call, Ident, Node, Select

LITERALS = ["0", "1", "-1", "42u", "0x1F", "0x1Fu", "1.5", "-2.5", ".5", "-.5", "1e3", "2.5E-3", "true", "false",
            "null", '""', '"a b"', "'single'", r'"esc\"aped"', r'"\x41\101\u00e9"', r'r"\d+"', '"""multi\nline"""',
            "b'bytes'", 'b"\\377"', "9223372036854775807", "-9223372036854775808", "9223372036854775808"]
NAMES = ["device", "x", "driver", "attributes", "capacity", "quantity", "size", "has", "all", "exists", "as", "_y1"]
BINARY = ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"]
SPACE = st.sampled_from(["", " ", "  ", "\n", " // note\n"])


@st.composite
def expressions(draw: st.DrawFn, depth: int = 4) -> str:
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(LITERALS + NAMES))
    inner = expressions(depth - 1)
    kind = draw(st.sampled_from(["binary", "binary", "unary", "select", "call", "method", "index", "list", "map",
                                 "ternary", "paren"]))
    a, s = draw(inner), draw(SPACE)
    if kind == "binary":
        op = draw(st.sampled_from(BINARY))
        if op == "in":  # see the module docstring: `0in0` is one identifier to cel-go, `0 in 0` to lark
            return f"{a} in {draw(inner)}"
        return f"{a}{s}{op}{draw(SPACE)}{draw(inner)}"
    if kind == "unary":
        return draw(st.sampled_from(["!", "-", "!!", "--", "- ", "!-"])) + a
    if kind == "select":
        return f"{a}.{draw(st.sampled_from(NAMES))}"
    if kind == "call":
        args = draw(st.lists(inner, max_size=3))
        return f"{draw(st.sampled_from(NAMES))}({', '.join(args)})"
    if kind == "method":
        return f"{a}.{draw(st.sampled_from(NAMES))}({s}{draw(inner)})"
    if kind == "index":
        return f"{a}[{draw(inner)}]"
    if kind == "list":
        return f"[{', '.join(draw(st.lists(inner, max_size=3)))}]"
    if kind == "map":
        return "{" + ", ".join(f"{k}: {v}" for k, v in draw(st.lists(st.tuples(inner, inner), max_size=2))) + "}"
    if kind == "ternary":
        return f"{a} ? {draw(inner)} : {draw(inner)}"
    return f"({s}{a}{s})"


TOKENS = [*LITERALS[:12], *NAMES[:4], *(op for op in BINARY if op != "in"), " in ", "!", "(", ")", "[", "]", "{", "}",
          ".", ",", ":", "?", "-", "#", "="]
soup = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).flatmap(
    lambda parts: st.lists(SPACE, min_size=len(parts), max_size=len(parts)).map(
        lambda spaces: "".join(s + p for s, p in zip(spaces, parts, strict=True))))


def outcome(parse) -> object:
    try:
        return parse()
    except SelectorError:
        return "rejected"


def both(text: str) -> tuple[object, object]:
    ours = outcome(lambda: parser.parse(text))
    reference = outcome(lambda: syntax.convert(text, syntax.parse_tree(text)))
    return ours, reference


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_well_formed_text_parses_to_the_same_ast(text: str) -> None:
    ours, reference = both(text)
    assert ours == reference, text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soup)
def test_token_soup_is_rejected_or_parsed_the_same(text: str) -> None:
    ours, reference = both(text)
    assert ours == reference or ours == "rejected" and names_in(reference), text


def names_in(ast: object) -> bool:
    """Whether lark read `in` as a name somewhere (cel-go never does)."""
    stack = [ast]
    while stack:
        node = stack.pop()
        if isinstance(node, (Ident, Select, Call)) and "in" in (getattr(node, "name", None),
                                                                 getattr(node, "field", None),
                                                                 getattr(node, "function", None)):
            return True
        if isinstance(node, Node.__args__):  # type: ignore[attr-defined]
            stack.extend(syntax.children(node))
    return False


@pytest.mark.parametrize(("text", "column"), [
    ("device.driver == == 1", 18),
    ("(1 + ", 4),
    ("device.driver == 'x' # y", 22),
    ("1. == 1.0", 1),
    ("!-device.driver", 2),
    ("quantity(\"1\"){}", 1),
])
def test_errors_point_where_the_reference_points(text: str, column: int) -> None:
    with pytest.raises(SelectorError) as raised:
        parser.parse(text)
    assert raised.value.column == column


def test_in_is_never_an_identifier() -> None:
    """cel-go: `device.driver.in` is "no viable alternative at input '.in'"; cel-python's grammar
    reads `in` after a dot as a field name. The parser follows cel-go."""
    with pytest.raises(SelectorError, match="Syntax error: unexpected 'in'"):
        parser.parse('device.attributes["a"].in == 1')


def test_deep_text_takes_the_reference_path_and_parses_the_same() -> None:
    deep = "(" * (parser.SHALLOW + 1) + "device.driver == 'x'" + ")" * (parser.SHALLOW + 1)
    shallow = "(" * parser.SHALLOW + "device.driver == 'x'" + ")" * parser.SHALLOW
    assert parser.parse(deep) == syntax.convert(deep, syntax.parse_tree(deep))
    assert parser.parse(shallow).pos == syntax.convert(shallow, syntax.parse_tree(shallow)).pos
