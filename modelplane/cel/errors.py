"""The one error this package raises for a selector Kubernetes would reject at admission.

Contract: ``SelectorError`` is a ``ValueError`` whose ``message`` says what is wrong and what is
allowed (or how to fix it); ``line`` and ``column`` are 1-based and set whenever the problem has a
place in the expression. ``str()`` renders ``line L, column C: message``.
"""

from __future__ import annotations


class SelectorError(ValueError):
    """An expression Kubernetes would reject (compile error, too long, compile-time type error)."""

    message: str
    column: int | None
    line: int | None

    def __init__(self, message: str, *, column: int | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.line = line if line is not None or column is None else 1

    def __str__(self) -> str:
        if self.column is None:
            return self.message
        return f"line {self.line}, column {self.column}: {self.message}"
