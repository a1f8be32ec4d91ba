"""`indented` is the standard library's indented, sorted JSON, byte for byte."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.report.json_text import indented


def reference(document: object) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner,
                                                                                               max_size=4),
                         max_leaves=30)


def same_as_reference(document: object) -> None:
    """The same text, or the same kind of error (keys of mixed types cannot be sorted)."""
    try:
        expected = reference(document)
    except TypeError:
        with pytest.raises(TypeError):
            indented(document)
    else:
        assert indented(document) == expected


@given(documents)
def test_any_json_data_encodes_as_the_standard_library_does(document: object) -> None:
    same_as_reference(document)


@given(st.lists(st.floats(), max_size=8))
def test_every_float_encodes_as_the_standard_library_does(floats: list[float]) -> None:
    same_as_reference({"floats": floats})


@pytest.mark.parametrize("document", [
    {}, [], "", {"b": [], "a": {}}, [[[]]], {"é": "\u2028 \"quoted\" \\ \n"}, [True, False, None, 0, -1, 2**70],
    [math.inf, -math.inf, math.nan, 1e-7, 0.1], (1, ("x",)),
], ids=repr)
def test_edge_cases_encode_as_the_standard_library_does(document: object) -> None:
    assert indented(document) == reference(document)


@pytest.mark.parametrize("document", [
    {1: "one"}, {True: 1, None: 2}, {"a": "x\x7fy"}, {"price": 1e16}, {"share": 2.5e-05}, {"name": "h100e8"},
    {"big": -(2**64)}, {"small": [1e-05, 9.99e-05, 0.0001]}, {"huge": [1e+16, 1.5e+300]}, {"ascii": "plain", "values": [0.5, 12, None]},
], ids=repr)
def test_what_orjson_writes_differently_still_comes_out_as_the_standard_library_does(document: object) -> None:
    same_as_reference(document)


def test_a_value_json_cannot_encode_is_refused() -> None:
    with pytest.raises(TypeError):
        indented({"when": object()})
