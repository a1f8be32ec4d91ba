"""`indented(document)`: the JSON text `plan`, `capacity` and `--what-if` print for machines.

Byte for byte `json.dumps(document, indent=2, sort_keys=True) + "\\n"` (ASCII, keys sorted, two
spaces per level, a final newline), for JSON data: dicts with str keys, lists and tuples, str,
int, float, bool and None. With an indent, the standard library encodes in Python through nested
generators (a 1,000-deployment plan, 3 MB of JSON, takes a tenth of a second); this builds the
same text with one call per container and the C string encoder, in less than half the time. A key
that is not a str raises TypeError (the standard library would convert it); any other value
raises as `json.dumps` does.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

_CONTAINERS = (dict, list, tuple)


def indented(document: Any) -> str:
    chunks: list[str] = []
    _encode(document, "\n", chunks)
    chunks.append("\n")
    return "".join(chunks)


def _encode(value: Any, newline: str, chunks: list[str]) -> None:
    """Append `value`'s text to `chunks`; `newline` is a newline and the indentation of its line."""
    if isinstance(value, dict):
        if not value:
            chunks.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key in sorted(value):
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            item = value[key]
            chunks += (separator, encode_basestring_ascii(key), ": ")
            separator = "," + inner
            if isinstance(item, str):
                chunks.append(encode_basestring_ascii(item))
            elif isinstance(item, _CONTAINERS):
                _encode(item, inner, chunks)
            else:
                chunks.append(_scalar(item))
        chunks.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            chunks.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            chunks.append(separator)
            separator = "," + inner
            if isinstance(item, str):
                chunks.append(encode_basestring_ascii(item))
            elif isinstance(item, _CONTAINERS):
                _encode(item, inner, chunks)
            else:
                chunks.append(_scalar(item))
        chunks.append(newline + "]")
    elif isinstance(value, str):
        chunks.append(encode_basestring_ascii(value))
    else:
        chunks.append(_scalar(value))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value)  # floats (NaN, Infinity), int subclasses; raises TypeError for the rest
