"""YAML text -> documents that remember the line of every field.

`parse_documents(file, text)` splits a kubectl-style multi-document stream and returns each
non-empty document's data together with a map from field location (`("spec", "engines", 0)`) to
its 1-based line, so every later problem can point at the line the user wrote. It never raises for
bad input: invalid YAML, duplicate keys and alias bombs come back as `Problem`s.

Invariants: pure (takes text, no I/O); uses libyaml's C parser when available (DESIGN section 8:
~10x faster on large files); documents are returned in stream order; each document's data is what
PyYAML's `safe_load` gives. The walk that records the lines also builds that data when the
document only uses YAML's core schema without merge keys (every Kubernetes manifest), an alias
giving the very object its anchor built, as PyYAML's constructor does; that constructor only runs
for the rest.

Nesting is bounded before libyaml composes (its C composer recurses once per level and overflows
the C stack, a segfault, somewhere past ~10,000 levels): `nesting_bound(text)`, an upper bound read
from the text alone, lets every ordinary file through to libyaml at once (up to `COMPOSE_SAFE`); a
text over that bound has its events counted first. A document nested deeper than `MAX_DEPTH` is an
error either way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from modelplane.api.problems import Problem

Loc = tuple[str | int, ...]

_MERGE_KEY = "tag:yaml.org,2002:merge"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_SCALAR = yaml.ScalarNode
_CONSTRUCTOR = yaml.constructor.SafeConstructor()  # its scalar functions keep no state
_SCALARS: dict[str, Callable[[yaml.ScalarNode], Any]] = {
    tag: functools.partial(yaml.SafeLoader.yaml_constructors[tag], _CONSTRUCTOR) for tag in (
        _STR, "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary")}
"""How SafeConstructor builds a scalar of each tag of the core schema."""
# A document may reuse nodes through aliases; bound what it expands to so validation of a
# "billion laughs" document cannot exhaust memory or time.
MAX_EXPANDED_NODES = 1_000_000
MAX_DEPTH = 200
"""The deepest nesting read (a Kubernetes object nests ~20 levels; libyaml crashes past ~10,000)."""
COMPOSE_SAFE = 2_000
"""Up to this bound libyaml composes safely and the walk refuses what nests deeper than MAX_DEPTH;
above it the events are counted first (the generated 1,000-deployment benchmark fleets bound 1,815
and 3,768 counted over the whole text; per document, as `nesting_bound` counts, far less)."""
_LEADING = re.compile(r"^[ \t?-]*", re.MULTILINE)
_DOCUMENT_START = re.compile(r"\n---(?=[ \t\r\n]|\Z)")
"""A line that starts a document (after the first line), found from its newline: a pattern that
starts with a literal character is searched for quickly, a multiline `^` at every character."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, resolving each distinct plain scalar's tag once per stream (manifests repeat
    most of their keys and values; PyYAML matches every one against its implicit-tag patterns)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.resolve = _memoized(super().resolve)  # type: ignore[method-assign]


def _memoized(resolve: Callable[[type[yaml.Node], Any, Any], str]) -> Callable[[type[yaml.Node], Any, Any], str]:
    """`resolve`, answering again from a memo for a plain scalar's text (its tag depends on the text
    alone: the implicit-tag patterns; the safe loader has no path resolvers). A quoted scalar or a
    collection goes to `resolve`, which answers without a pattern.

    A closure set on the loader rather than a method: libyaml's composer calls it once per scalar
    and gets it without binding a method. Composing the varied 1,000 x 10,000 benchmark fleet
    (734,171 scalars) took 0.96 CPU s with a method memoizing by text and implicitness, 0.85 s so
    (2026-11-26)."""
    tags: dict[str, str] = {}

    def memoized(kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        if kind is _SCALAR and implicit[0]:
            tag = tags.get(value)
            if tag is None:
                tag = tags[value] = resolve(kind, value, implicit)
            return tag
        return resolve(kind, value, implicit)

    return memoized


@dataclass(frozen=True)
class Document:
    file: str
    line: int
    data: Any
    lines: dict[Loc, int]

    def line_of(self, loc: Loc) -> int:
        """The line of `loc`, or of its nearest written ancestor (a missing field's parent)."""
        for end in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return self.line


def parse_documents(file: str, text: str) -> tuple[list[Document], list[Problem]]:
    documents: list[Document] = []
    problems: list[Problem] = []
    if not _bounded_by(text, COMPOSE_SAFE):
        deep = _too_deep(text)
        if deep:
            return [], [_too_deep_problem(file, deep)]
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None or _is_empty(node):
                continue
            line = node.start_mark.line + 1
            walker = _LineWalker()
            try:
                data = walker.walk(node, ())
            except _TooDeep:
                problems.append(_too_deep_problem(file, line))
                continue
            try:
                # Without aliases a document holds exactly the values it writes.
                size = walker.expanded_size(node) if walker.aliased else walker.values
            except RecursionError:  # a chain of aliases, each nesting the one before
                problems.append(Problem(file, line, code="yaml",
                                        message="document nests too deeply through YAML aliases; flatten it"))
                continue
            if walker.problems:
                problems.extend(Problem(file, ln, message=msg, code="yaml") for ln, msg in walker.problems)
                continue
            if size > MAX_EXPANDED_NODES:
                problems.append(Problem(
                    file, line, code="yaml",
                    message=f"document expands to more than {MAX_EXPANDED_NODES:,} values through "
                            "YAML aliases; write the values out or use fewer nested aliases"))
                continue
            documents.append(Document(file, line, data if walker.built else loader.construct_document(node),
                                      walker.lines))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at column {mark.column + 1}" if mark else ""
        context = f" ({error.context})" if error.context else ""
        problems.append(Problem(file, mark.line + 1 if mark else 1, code="yaml",
                                message=f"invalid YAML{where}: {error.problem}{context}"))
    except yaml.YAMLError as error:  # reader errors: control characters, bad encodings
        problems.append(Problem(file, 1, code="yaml", message=f"invalid YAML: {error}"))
    finally:
        loader.dispose()
    return documents, problems


def nesting_bound(text: str) -> int:
    """At least the nesting depth of any document in `text`. A flow collection opens with `[` or
    `{` (an empty `[]`/`{}` nests nothing inside it: the `+ 1`); a block collection nested in
    another starts further right than its parent's entries, except a sequence written at its key's
    column (so at most two levels per column); the column of a line's innermost block entry is at
    most the length of its leading run of spaces, `-` and `?` plus one key.

    Brackets are counted per document, not over the whole text: a line that starts with `---` and
    a space or its end is never inside a document's content (YAML forbids it in every scalar,
    quoted, plain or block; libyaml ends the document there or stops with an error), so no
    document spans two of the pieces such lines cut the text into. Splitting less is always safe.
    Counted over the whole text, the varied 100 x 1,000 benchmark fleet (1,000 documents) bounded
    3,768 and paid a second libyaml pass counting its events, 0.34 s of its 1.27 s of parsing (CPU,
    loaded 2-core machine); per document it bounds far below `COMPOSE_SAFE`."""
    return _flow_bound(text) + 2 * (max((len(run) for run in _LEADING.findall(text)), default=0) + 2)


def _flow_bound(text: str) -> int:
    """The `[`/`{` part of `nesting_bound`: the most one document opens, plus one."""
    starts = [0, *(found.start() + 1 for found in _DOCUMENT_START.finditer(text)), len(text)]
    return max(text.count("[", start, end) - text.count("[]", start, end) + text.count("{", start, end)
               - text.count("{}", start, end) for start, end in zip(starts, starts[1:])) + 1


def _bounded_by(text: str, limit: int) -> bool:
    """Whether `nesting_bound(text) <= limit`, asking only whether some line's leading run is
    longer than the limit allows rather than measuring every line's (one search for a newline
    and that many run characters). With the document pieces counted in place rather than cut
    out, this took the varied 1,000 x 10,000 benchmark fleet (12.6 MB) 0.05 CPU s where
    `nesting_bound` took 0.17 s (2026-11-26)."""
    widest = (limit - _flow_bound(text)) // 2 - 2  # the widest leading run the limit allows
    if widest < 0:
        return False
    wider = rf"[ \t?-]{{{widest + 1}}}"
    return re.match(wider, text) is None and re.search("\n" + wider, text) is None


class _TooDeep(Exception):
    """The walk went deeper than MAX_DEPTH."""


def _too_deep_problem(file: str, line: int) -> Problem:
    return Problem(file, line, code="yaml",
                   message=f"nests deeper than {MAX_DEPTH} levels; Modelplane reads at most {MAX_DEPTH} (flatten it)")


def _too_deep(text: str) -> int:
    """The line where a document first nests deeper than MAX_DEPTH, or 0 (or 0 for text libyaml
    cannot parse: `parse_documents` reports that as it always does)."""
    starts, ends = (yaml.MappingStartEvent, yaml.SequenceStartEvent), (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    loader = _Loader(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, starts):
                depth += 1
                if depth > MAX_DEPTH:
                    return event.start_mark.line + 1
            elif isinstance(event, ends):
                depth -= 1
    except yaml.YAMLError:
        return 0
    finally:
        loader.dispose()
    return 0


def _is_empty(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null" and node.value in ("", "~", "null")


class _LineWalker:
    """Records the line of every mapping key and sequence item; finds duplicate keys; builds the
    data of a document in the core schema without merge keys (`built`)."""

    def __init__(self) -> None:
        self.lines: dict[Loc, int] = {}
        self.problems: list[tuple[int, str]] = []
        self.aliased = False
        """Whether the document reuses a collection (an alias or a merge key)."""
        self.exotic = False
        """Whether the document has a tag outside the core schema, a key that is not a scalar or a
        merge key."""
        self.values = 0
        """The values (keys included) the walk met."""
        self._built: dict[int, Any] = {}
        """The data of each collection walked, by the id of its node (an alias gives it again)."""
        self._sizes: dict[int, int] = {}

    @property
    def built(self) -> bool:
        """Whether what `walk` returned is the document's data as SafeConstructor builds it."""
        return not self.exotic

    def walk(self, node: yaml.Node, loc: Loc) -> Any:
        """Record the lines under `node` and return its data (meaningful only while `built`).

        A scalar child is built in its parent's loop rather than by a call of its own (two thirds
        of a manifest's nodes are scalars), and only collections are remembered to tell an alias:
        a scalar met twice holds the same value either way. The line of a key doubles as the
        record of which keys the mapping has seen. Walking the varied 1,000 x 10,000 benchmark
        fleet (588,495 nodes) took 0.46 CPU s before, 0.42 s so; giving an alias the object its
        anchor built spared its 1,980 documents with anchors PyYAML's constructor, parsing the
        fleet in 1.45 CPU s instead of 1.66 (2026-11-26)."""
        if len(loc) > MAX_DEPTH:
            raise _TooDeep
        if node.__class__ is _SCALAR:
            self.values += 1
            return node.value if node.tag == _STR else self._scalar(node)
        built = self._built.get(id(node))
        if built is not None:  # an alias: its lines were recorded where it was defined
            self.aliased = True
            return built
        deep = len(loc) >= MAX_DEPTH  # a child would be too deep
        lines = self.lines
        if isinstance(node, yaml.MappingNode):
            self.exotic |= node.tag != _MAP
            mapping: dict[Any, Any] = {}
            self._built[id(node)] = mapping  # before its values: one may be an alias of it
            self.values += 1 + len(node.value)
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_KEY:
                    self.aliased = self.exotic = True
                    continue
                if not isinstance(key_node, yaml.ScalarNode):  # a list or a mapping: PyYAML refuses it
                    self.exotic = True
                    continue
                key = key_node.value
                line = key_node.start_mark.line + 1
                child = (*loc, key)
                first = lines.get(child)
                if first is not None:
                    self.problems.append((line, f"duplicate key {key!r} (first at line {first}); "
                                                "a key may appear once in a mapping"))
                    continue
                lines[child] = line
                if key_node.tag != _STR:
                    key = self._scalar(key_node)
                if value_node.__class__ is _SCALAR:
                    if deep:
                        raise _TooDeep
                    self.values += 1
                    mapping[key] = value_node.value if value_node.tag == _STR else self._scalar(value_node)
                else:
                    mapping[key] = self.walk(value_node, child)
            return mapping
        self.exotic |= node.tag != _SEQ
        self.values += 1
        sequence: list[Any] = []
        self._built[id(node)] = sequence
        for index, item in enumerate(node.value):
            child = (*loc, index)
            lines[child] = item.start_mark.line + 1
            if item.__class__ is _SCALAR:
                if deep:
                    raise _TooDeep
                self.values += 1
                sequence.append(item.value if item.tag == _STR else self._scalar(item))
            else:
                sequence.append(self.walk(item, child))
        return sequence

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _STR:
            return node.value
        construct = _SCALARS.get(node.tag)
        if construct is None:
            self.exotic = True
            return None
        return construct(node)

    def expanded_size(self, node: yaml.Node) -> int:
        """How many values the document holds once aliases are expanded (memoized: linear)."""
        cached = self._sizes.get(id(node))
        if cached is not None:
            return cached
        self._sizes[id(node)] = MAX_EXPANDED_NODES + 1  # a node that contains itself never ends
        if isinstance(node, yaml.MappingNode):
            size = 1 + sum(self.expanded_size(k) + self.expanded_size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self.expanded_size(item) for item in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size
        return size
