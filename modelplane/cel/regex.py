"""Patterns for CEL's ``matches``, accepted and matched as Go's regexp package does for cel-go.

Contract: ``compile_pattern(pattern)`` returns a compiled RE2 pattern or raises ``PatternError``
with RE2's reason; ``pattern_problem(pattern)`` is that reason or None. Both Kubernetes' checker
(cel-go's ``ValidateRegexLiterals``, on since 1.29, and the program planner, which compiles a
literal pattern of the global form) and its runtime compile patterns with Go's regexp, whose
syntax is RE2's. This uses Google's RE2 (google-re2, cel-python's own dependency), which agrees
with Go on every pattern tried against a real API server except ``\\C`` (any byte), which Go
refuses: it is refused here too.

Compiled patterns are memoized for the process (pure), and RE2 logs nothing.
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class PatternError(ValueError):
    """A pattern Go's regexp would not compile."""


def pattern_problem(pattern: str) -> str | None:
    try:
        compile_pattern(pattern)
    except PatternError as error:
        return str(error)
    return None


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re2._Regexp:
    if _any_byte_escape(pattern):
        raise PatternError(r"invalid escape sequence: \C")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid pattern"
        raise PatternError(reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)) from None


def _any_byte_escape(pattern: str) -> bool:
    r"""Whether the pattern uses ``\C`` outside a ``\Q...\E`` literal."""
    index, literal = 0, False
    while index < len(pattern):
        if literal:
            end = pattern.find(r"\E", index)
            if end < 0:
                return False
            index, literal = end + 2, False
        elif pattern[index] == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped == "C":
                return True
            literal = escaped == "Q"
            index += 2
        else:
            index += 1
    return False
