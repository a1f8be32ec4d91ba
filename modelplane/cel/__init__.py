"""Kubernetes DRA device-selector CEL, evaluated in Python on cel-python 0.5.0.

A selector is one CEL expression over one ``device`` (``device.driver``,
``device.attributes["<domain>"].<name>``, ``device.capacity["<domain>"].<name>``) with
Kubernetes' ``quantity()`` and ``semver()`` libraries. This package answers two questions the
way Kubernetes does: would the API server admit the selector (``check_selector``, raising
``SelectorError`` with a 1-based line and column), and does a device match it
(``SelectorEvaluator.evaluate``, ``selector_matches``). A runtime error or a non-bool result is
"no match", with the reason kept for ``explain``.

Modules: ``parser`` (text to AST), ``syntax`` (the AST, cel-python's grammar, limits), ``check``
(static types, cost), ``quantity`` and ``semver`` (the value types), ``regex`` (``matches``
patterns), ``library`` (CEL functions), ``device`` (the device view), ``fast`` (closures for common
shapes), ``reference`` (cel-python's interpreter, budgeted), ``program`` (compile, evaluate,
memoize). Pure: no Pulumi, no printing, no environment, and no I/O beyond reading cel-python's
packaged grammar once (when a selector needs it).

Deliberate divergences (what cannot match Kubernetes' CEL exactly, and which way each errs);
tests/cel/verdicts.py records Kubernetes' verdict on each kind of case, and a test submits every one
to a real API server:
- Declared surface: core CEL (with the ``bool()``, ``bytes()``, ``string()``, ``int()``, ``uint()``
  and ``double()`` conversions), the ``quantity`` library without ``mul``/``div``/``divInt``, and
  ``semver``, with Kubernetes' exact shapes (``sign`` is a global function; ``semver`` and
  ``isSemver`` take the normalize flag). Kubernetes' string extension, list, regex (``find``), URL,
  IP, CIDR, format and set libraries, optional types, two-variable comprehensions, ``cel.bind``,
  timestamps, durations and ``type()`` are rejected at validation (named as Kubernetes functions
  modelplane does not support, with the list of those it does),
  where Kubernetes admits them. Errs toward rejecting, never toward a wrong match.
- Cost: the static estimate follows cel-go's shape (comparisons priced by the smaller operand's
  known size, so comparing two values of unknown size, such as two quantities with ``!=``, is
  too complex, as in Kubernetes), not all its constants. It rejects what is exponential, as
  Kubernetes does, but may admit a selector Kubernetes calls too complex (or, rarely, the
  reverse). At run time a budget of ``reference.STEP_BUDGET`` node visits (a quarter of a second
  of cel-python, far less work than Kubernetes' 1,000,000 cost units) ends evaluations Kubernetes
  would finish, such as three nested comprehensions over ten elements. Errs toward no match.
- Nesting: admission follows cel-go's parser limits exactly (``syntax``). Evaluation of a shape
  the fast path does not cover runs in cel-python's interpreter, which recurses per operator,
  selection or nested call (parentheses and ``&&``/``||`` chains cost nothing): a tree more than
  ``reference.MAX_LEVELS`` (100) such levels deep, about 50 chained additions, is not run and
  does not match, where Kubernetes evaluates it. Errs toward no match.
- Quantities: a decimal-form value that needs more than 4096 digits, or arithmetic between
  quantities that far apart, is a runtime error; Kubernetes would compute it with a huge big.Int.
  Errs toward no match.
- Comprehensions (``all``, ``exists``, ``exists_one``, ``filter``, ``map``) run in cel-python's
  own macro code: an error inside ``exists_one``, ``filter`` or ``map`` is not absorbed by an
  enclosing ``&&``/``||``, and ``filter`` treats a non-bool predicate as false where Kubernetes
  reports an error. Errs toward no match (once toward a wrong element set inside ``filter``);
  device selectors rarely use comprehensions. Everything outside them follows cel-go: see
  ``library`` for the operators that replace cel-python's (equality, ordering, ``in``, ``&&``,
  ``||``, ``*``, ``[]``, ``matches``, ``string()``) and ``reference`` for comprehension ranges.
- Equality of lists and maps compares element by element with the same rule; cel-go skips an
  element whose comparison is an error. Errs toward an error, so no match.
- Patterns of ``matches`` are RE2 (google-re2), which agrees with Go's regexp on syntax except
  ``\\C``, which is refused as Go refuses it (``regex``).

Kubernetes facts this package follows are cited in each module: limits from
pkg/apis/resource/types.go and validation.go, the device view from
dynamic-resource-allocation/cel/compile.go, quantities from apimachinery's quantity.go and
suffix.go, the libraries from apiserver/pkg/cel/library/{quantity,semverlib}.go.
"""

from modelplane.cel.device import Device
from modelplane.cel.errors import SelectorError
from modelplane.cel.program import Evaluation, SelectorEvaluator, check_selector, selector_matches

__all__ = ["Device", "Evaluation", "SelectorError", "SelectorEvaluator", "check_selector", "selector_matches"]
