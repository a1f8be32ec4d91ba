"""The reference evaluator: cel-python's own interpreter, with our function table and a budget.

Contract: ``evaluate(tree, device)`` runs cel-python 0.5.0's ``Evaluator`` on a parse tree (with
positions, which its error values need) for ``device``, with ``library.FUNCTIONS`` registered, and
returns the result value or raises ``EvalError`` with a readable message. It is the semantic
reference the fast path is tested against, and the evaluator for every shape the fast path does
not cover; ``evaluator(tree)`` is that function for one tree.

Invariants: one evaluation visits at most ``STEP_BUDGET`` parse-tree nodes, macro bodies included,
so no expression that passed the checker's estimate can run away (a range of lists the estimate
could not size, for example). A visit costs cel-python about 13 microseconds, so the budget keeps
one evaluation near a quarter of a second; Kubernetes stops at 1,000,000 cost units, about 0.1 s
in Go, which is far more work. cel-python recurses up to six Python frames per tree level that
does more than pass its child on, so a tree deeper than ``MAX_LEVELS`` such levels is not run at
all (its evaluations are errors): the outcome never depends on how deep the caller's stack is.
Both err toward no match.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, cast

import lark
from celpy.evaluation import Activation, CELEvalError, Evaluator

from modelplane.cel.device import Device
from modelplane.cel.fast import EvalError
from modelplane.cel.library import FUNCTIONS, NoOverload, type_name
from modelplane.cel.quantity import QuantityError
from modelplane.cel.regex import PatternError
from modelplane.cel.semver import SemverError
from modelplane.cel.syntax import ParseTree

STEP_BUDGET = 20_000
MAX_LEVELS = 100  # about 600 frames, leaving the rest of Python's default 1,000 to the caller
_MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
_PASS_THROUGH = frozenset(("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                           "member", "paren_expr"))
_MISSING_MEMBER = re.compile(r"no such member in mapping: '(.*)'")


class _BudgetExhausted(BaseException):
    # A BaseException on purpose: cel-python's ``except Exception`` handlers would log it as an
    # internal error and its macros would fold it into an ordinary CEL error value.
    pass


class _BudgetedEvaluator(Evaluator):
    """cel-python's interpreter, charging one step per parse-tree node it visits."""

    def __init__(self, ast: ParseTree, activation: Activation, steps: list[int]) -> None:
        super().__init__(ast, activation)
        self._steps = steps

    def sub_evaluator(self, ast: ParseTree) -> Evaluator:
        return _BudgetedEvaluator(ast, self.activation, self._steps)

    def member_dot_arg(self, tree: ParseTree) -> Any:
        # cel-python would iterate a string's characters, or fail with a Python TypeError on an
        # int; CEL (and Kubernetes) call a comprehension over a non-container an error.
        if cast(lark.Token, tree.children[1]).value in _MACROS:
            target = self.visit(cast(ParseTree, tree.children[0]))
            if not isinstance(target, (list, dict, CELEvalError)):
                return CELEvalError(f"got '{type_name(target)}', expected iterable type", tree=tree)
        return super().member_dot_arg(tree)

    def _visit_tree(self, tree: ParseTree) -> Any:
        # lark's Interpreter sends every node, through visit() or visit_children(), here. A node
        # with one child only passes its child's value on (a grammar layer, a parenthesis): it is
        # charged a step but walked in this loop, so nesting costs no Python stack per layer.
        while True:
            self._steps[0] -= 1
            if self._steps[0] < 0:
                raise _BudgetExhausted
            child = _passes_on(tree)
            if child is None:
                return super()._visit_tree(tree)
            tree = child


_ACTIVATION = Activation(functions=FUNCTIONS)


def evaluator(tree: ParseTree) -> Callable[[Device], Any]:
    """``evaluate`` bound to ``tree``, or, for a tree too deep for cel-python, a function that
    reports that as the error of every evaluation."""
    levels = _levels(tree)
    if levels <= MAX_LEVELS:
        return functools.partial(evaluate, tree)
    message = (f"cel-python cannot evaluate an expression nesting {levels} operators, calls and selections "
               f"deep (at most {MAX_LEVELS}); simplify the selector")

    def too_deep(device: Device) -> Any:
        raise EvalError(message)

    return too_deep


def _passes_on(tree: ParseTree) -> lark.Tree[Any] | None:
    """The child a node only passes on (a grammar layer, a parenthesis), else None."""
    children = tree.children
    if len(children) == 1 and isinstance(child := children[0], lark.Tree) and (
            tree.data in _PASS_THROUGH or tree.data == "primary" and child.data == "paren_expr"):
        return child
    return None


def _levels(tree: ParseTree) -> int:
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        depth += _passes_on(node) is None
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node.children if isinstance(child, lark.Tree))
    return deepest


def evaluate(tree: ParseTree, device: Device) -> Any:
    try:
        return _BudgetedEvaluator(tree, _ACTIVATION, [STEP_BUDGET]).evaluate({"device": device.activation})
    except CELEvalError as error:
        raise EvalError(message(error)) from None
    except _BudgetExhausted:
        raise EvalError(f"evaluation exceeded the budget of {STEP_BUDGET} steps; simplify the selector") from None
    except Exception as error:  # noqa: BLE001 - cel-python's own failure on an admitted expression
        # A selector is user input: a cel-python limitation must end as no match, not a traceback.
        raise EvalError(f"cel-python could not evaluate this expression ({type(error).__name__}: {error})") from None


def message(error: CELEvalError) -> str:
    """The readable part of a cel-python error value: the cause when we raised it, else its text."""
    text = str(error.args[0]) if error.args else "error"
    cause_type = error.args[1] if len(error.args) > 1 else None
    cause_args = error.args[2] if len(error.args) > 2 else None
    missing = _MISSING_MEMBER.fullmatch(text)
    if missing:
        return f"no such key: {missing.group(1)}"
    if cause_type is KeyError and cause_args:
        return f"no such key: {cause_args[0]}"
    ours = (NoOverload, QuantityError, SemverError, PatternError, IndexError)
    if isinstance(cause_type, type) and issubclass(cause_type, ours) and cause_args:
        return str(cause_args[0])
    return text
