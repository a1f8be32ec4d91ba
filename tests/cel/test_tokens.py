"""The one-pass tokenizer against the `match` loop it replaced, and the token count that lets
`parser.parse` skip cel-go's path-depth walk.

`reference_tokens` is the loop `parser._tokenize` was before (session 9): match the token pattern
at the current position, stop with the offending character where nothing matches, count nesting
token by token. On any text, the new tokenizer must give the same tokens (kind, text, offsets),
the same None for text nested deeper than `SHALLOW`, or the same error at the same place.
"""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from modelplane.cel import parser, syntax
from modelplane.cel.errors import SelectorError
from tests.cel.test_parser import expressions, soup

_OLD_TOKENS = re.compile(parser._TOKENS.pattern.replace("\n  | (?P<bad>[\\s\\S])\n", "\n"), re.X)
_KEYWORDS = {"true": "BOOL_LIT", "false": "BOOL_LIT", "null": "NULL_LIT"}


def reference_tokens(text: str) -> list[parser._Token] | None:
    tokens: list[parser._Token] = []
    depth = deepest = questions = 0
    position = 0
    while position < len(text):
        found = _OLD_TOKENS.match(text, position)
        if found is None:
            line, column = syntax.locate(text, position)
            raise SelectorError(f"Syntax error: unexpected character {text[position]!r}", line=line, column=column)
        kind, value, position = found.lastgroup or "", found.group(), found.end()
        if kind == "space":
            continue
        if kind == "number":
            kind = parser._number_kind(value)
        elif kind == "ident":
            kind = _KEYWORDS.get(value, "in" if value == "in" else "ident")
        elif kind == "STRING_LIT" and value.lstrip("rR")[:3] in ('"""', "'''"):
            kind = "MLSTRING_LIT"
        elif kind == "op":
            kind = value
            depth += value in "([{"
            depth -= value in ")]}"
            deepest = max(deepest, depth)
            questions += value == "?"
        tokens.append(parser._Token(kind, value, found.start(), found.end()))
    last = tokens[-1].start if tokens else 0
    tokens.append(parser._Token("end", "", last, last))
    return tokens if deepest + questions <= parser.SHALLOW else None


def outcome(tokenize, text: str) -> object:
    try:
        return tokenize(text)
    except SelectorError as error:
        return ("rejected", error.message, error.line, error.column)


def test_the_reference_is_the_pattern_without_its_catch_all() -> None:
    assert "(?P<bad>" in parser._TOKENS.pattern and "(?P<bad>" not in _OLD_TOKENS.pattern


characters = st.text(alphabet="ab_01x9.eE+-uU \n\t\"'rRbB\\()[]{}?:,!=<>&|*/%#$@;`~é\x00", max_size=40)
fragments = st.lists(st.sampled_from(['"', "'", '"""', "'''", "\\", "\n", "\\\n", "\\\"", "a", "in", "1", "0x", ".",
                                      "e", "u", "b", "r", " ", "(", ")", "?", "//", "&&", "=", "é"]),
                     max_size=12).map("".join)
nested = st.tuples(st.integers(0, 60), st.sampled_from("([{?"), expressions(2)).map(
    lambda t: t[1] * t[0] + t[2] + {"(": ")", "[": "]", "{": "}", "?": " : 1"}[t[1]] * t[0])


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(characters, fragments, expressions(), soup, nested))
@example('"a\\\n"')  # a backslash does not carry a string over a newline
@example('"""a\\\n"""')
def test_the_tokens_are_those_of_the_match_loop(text: str) -> None:
    assert outcome(parser._tokenize, text) == outcome(reference_tokens, text), text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_no_path_counts_more_nodes_than_the_text_has_tokens(text: str) -> None:
    """What lets `parse` skip `check_path_depth` for text of at most 250 tokens: every node
    cel-go's visitor counts has a token of its own, so the walk finds no path longer than the
    token count (here, the limit is set to it)."""
    tokens = parser._tokenize(text)
    try:
        ast = parser.parse(text)
    except SelectorError:
        return
    if tokens is None:
        return
    with mock.patch.object(syntax, "MAX_RECURSION", len(tokens) - 1):  # the tokens but "end"
        syntax.check_path_depth(ast)


def test_a_long_chain_still_meets_the_path_limit() -> None:
    for chain, ok in (("device" + ".driver" * 250, True), ("device" + ".driver" * 251, False),
                      ("1" + " + 1" * 251, False)):
        try:
            parser.parse(chain)
        except SelectorError as error:
            assert not ok and "max recursion depth exceeded" in error.message
        else:
            assert ok
