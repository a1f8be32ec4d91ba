"""`indented` is the standard library's indented, sorted JSON, byte for byte."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.json_text import indented


def reference(document: object) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                               max_size=4),
                         max_leaves=30)


@given(documents)
def test_any_json_data_encodes_as_the_standard_library_does(document: object) -> None:
    assert indented(document) == reference(document)


@pytest.mark.parametrize("document", [
    {}, [], "", {"b": [], "a": {}}, [[[]]], {"é": "\u2028 \"quoted\" \\ \n"}, [True, False, None, 0, -1, 2**70],
    [math.inf, -math.inf, math.nan, 1e-7, 0.1], (1, ("x",)),
], ids=repr)
def test_edge_cases_encode_as_the_standard_library_does(document: object) -> None:
    assert indented(document) == reference(document)


def test_a_key_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        indented({1: "one"})


def test_a_value_json_cannot_encode_is_refused() -> None:
    with pytest.raises(TypeError):
        indented({"when": object()})
