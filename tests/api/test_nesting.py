"""YAML nesting is bounded before libyaml composes (its C composer overflowed the C stack, a
segfault with no message, at ~25,000 levels): `nesting_bound` must never be below a document's
real depth, and deep documents of every shape are one clear error."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.documents import COMPOSE_SAFE, MAX_DEPTH, _bounded_by, _flow_bound, nesting_bound, parse_documents

leaves = st.one_of(st.integers(), st.text(alphabet="ab[]{}'\"-?: ", max_size=4), st.none())
trees = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text("abc", min_size=1, max_size=2), inner,
                                                                      max_size=3)), max_leaves=40)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    return 0


def events_depth(text: str) -> int:
    level = deepest = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            level += 1
            deepest = max(deepest, level)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            level -= 1
    return deepest


@settings(max_examples=300, deadline=None)
@given(trees, st.sampled_from([None, False, True]), st.integers(2, 6))
def test_the_bound_is_never_below_the_depth(tree: Any, flow: bool | None, indent: int) -> None:
    text = yaml.safe_dump({"a": tree}, default_flow_style=flow, indent=indent)
    assert nesting_bound(text) >= events_depth(text) == depth({"a": tree})


@given(st.integers(1, 50))
def test_the_bound_holds_for_compact_and_same_column_forms(levels: int) -> None:
    for text in ("- " * levels + "x\n", "? " * levels + "x\n",
                 "k:\n" + "".join(f"{'  ' * i}- k:\n" for i in range(levels)) + "  " * levels + "- x\n"):
        assert nesting_bound(text) >= events_depth(text)


DEEP = {
    "flow sequences": "a: " + "[" * 25_000 + "]" * 25_000 + "\n",
    "flow mappings": "a: " + "{a: " * 25_000 + "1" + "}" * 25_000 + "\n",
    "compact block sequences": "- " * 30_000 + "x\n",
    "indented mappings": "".join(" " * i + "a:\n" for i in range(MAX_DEPTH + 5)) + " " * (MAX_DEPTH + 5) + "x\n",
}


def test_deep_documents_are_one_clear_error() -> None:
    for shape, text in DEEP.items():
        documents, problems = parse_documents("deep.yaml", text)
        assert documents == [], shape
        assert [p.message for p in problems] == [
            f"nests deeper than {MAX_DEPTH} levels; Modelplane reads at most {MAX_DEPTH} (flatten it)"], shape


def test_a_document_at_the_limit_reads() -> None:
    text = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    documents, problems = parse_documents("ok.yaml", text)
    assert problems == [] and len(documents) == 1


def test_a_deep_document_under_the_compose_bound_is_refused_by_the_walk() -> None:
    text = "a: " + "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50) + "\n"
    assert MAX_DEPTH < nesting_bound(text) <= COMPOSE_SAFE
    documents, problems = parse_documents("deep.yaml", text)
    assert documents == [] and [(p.line, p.message) for p in problems] == [
        (1, f"nests deeper than {MAX_DEPTH} levels; Modelplane reads at most {MAX_DEPTH} (flatten it)")]


@settings(max_examples=200, deadline=None)
@given(st.lists(trees, min_size=1, max_size=4), st.sampled_from([None, False, True]))
def test_the_bound_of_several_documents_is_never_below_the_deepest(documents: list[Any], flow: bool | None) -> None:
    text = yaml.safe_dump_all([{"a": tree} for tree in documents], default_flow_style=flow, explicit_start=True)
    assert nesting_bound(text) >= events_depth(text) == max(depth({"a": tree}) for tree in documents)


def test_brackets_are_counted_per_document() -> None:
    one = "a: [[1, 2], {b: [3]}]\n"  # 4 brackets, nested 3 deep
    text = "---\n".join([one] * 1_000)
    assert nesting_bound(text) == nesting_bound("---\n" + one) < COMPOSE_SAFE < 4 * 1_000
    with mock.patch("modelplane.api.documents._too_deep", side_effect=AssertionError("counted the events")):
        documents, problems = parse_documents("many.yaml", text)
    assert problems == [] and len(documents) == 1_000


def test_a_line_that_only_looks_like_a_document_start_does_not_cut_a_document() -> None:
    for text in ("a: [\n  ---x]\n", "a: |\n  --- in a block scalar\n", "a: '\n ---'\n", "a: [\n---x]\n"):
        assert nesting_bound(text) >= events_depth(text), text


def test_a_deep_document_after_others_is_one_clear_error() -> None:
    for shape, deep in DEEP.items():
        documents, problems = parse_documents("deep.yaml", "a: 1\n---\n" + deep)
        assert len(documents) <= 1 and [p.message for p in problems] == [
            f"nests deeper than {MAX_DEPTH} levels; Modelplane reads at most {MAX_DEPTH} (flatten it)"], shape


lines = st.lists(st.tuples(st.text(alphabet=" \t?-", max_size=12),
                           st.sampled_from(["", "---", "--- [a]", "---x", "a: [", "]", "{b: {}}", "[]", "- [[c]]",
                                            "... {"]),
                           st.sampled_from(["\n", "\r\n", "\r"])), max_size=12)


@settings(max_examples=500, deadline=None)
@given(lines, st.integers(-5, 60))
def test_the_quick_check_is_the_bound_against_a_limit(parts: list[tuple[str, str, str]], slack: int) -> None:
    """`parse_documents` asks `_bounded_by(text, COMPOSE_SAFE)`; it must say what comparing
    `nesting_bound` says, for limits on both sides of the bound."""
    text = "".join(lead + body + end for lead, body, end in parts)
    bound = nesting_bound(text)
    for limit in (bound + slack, bound - slack, slack):
        assert _bounded_by(text, limit) == (bound <= limit), (text, limit)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_brackets_counted_in_place_are_those_of_the_cut_pieces(parts: list[tuple[str, str, str]]) -> None:
    """The pieces between document starts, counted where they lie, as when they were cut out
    with a multiline `^---` (how `nesting_bound` counted them before)."""
    text = "".join(lead + body + end for lead, body, end in parts)
    pieces = re.split(r"^---(?=[ \t\r\n]|$)", text, flags=re.MULTILINE)
    assert _flow_bound(text) == max(p.count("[") - p.count("[]") + p.count("{") - p.count("{}") for p in pieces) + 1
