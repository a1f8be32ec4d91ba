"""Kubernetes DRA device-selector CEL, evaluated in Python on cel-python 0.5.0.

A selector is one CEL expression over one ``device`` (``device.driver``,
``device.attributes["<domain>"].<name>``, ``device.capacity["<domain>"].<name>``) with
Kubernetes' ``quantity()`` and ``semver()`` libraries. This package answers two questions the
way Kubernetes does: would the API server admit the selector (``check_selector``, raising
``SelectorError`` with a 1-based line and column), and does a device match it
(``SelectorEvaluator.evaluate``, ``selector_matches``). A runtime error or a non-bool result is
"no match", with the reason kept for ``explain``.

Modules: ``syntax`` (parse, limits), ``check`` (static types, cost), ``quantity`` and ``semver``
(the value types), ``library`` (CEL functions), ``device`` (the device view), ``fast`` (closures
for common shapes), ``reference`` (cel-python's interpreter, budgeted), ``program`` (compile,
evaluate, memoize). Pure: no Pulumi, no I/O, no printing, no environment.

Deliberate divergences (what cannot match Kubernetes' CEL exactly, and which way each errs):
- Extension libraries: only core CEL, ``quantity`` (without ``mul``/``div``/``divInt``) and
  ``semver`` are declared; Kubernetes' string, list, regex, URL, IP, format libraries, ``cel.bind``,
  timestamps, durations, ``type()`` and ``bool()``/``bytes()``/``string(bool)`` conversions are
  rejected at validation. Errs toward rejecting, with a clear error, never toward a wrong match.
- Cost: the static estimate follows cel-go's shape, not its constants; it rejects what is
  exponential as Kubernetes does, but may admit a selector Kubernetes would call too complex.
  At runtime a budget of ``reference.STEP_BUDGET`` node visits (a quarter of a second of
  cel-python, far less work than Kubernetes' 1,000,000 cost units) ends evaluations Kubernetes
  might finish: errs toward no match.
- Nesting: more than ``syntax.MAX_DEPTH`` parse levels (about 14 nested parentheses, or 150
  chained ``&&``) is rejected at validation; cel-go allows deeper nesting. Errs toward rejecting.
- Quantities: a decimal value that would need more than 4096 digits (say ``1e5000`` with 20
  significant digits) and arithmetic between quantities that far apart are runtime errors;
  Kubernetes would allocate the digits. Errs toward no match.
- Inside ``all``/``exists``/``exists_one``/``filter``/``map``, combining a non-bool predicate
  follows cel-python (Kubernetes reports "no such overload" where cel-python may skip it); the
  operators ``==``, ``!=``, ``<``-family, ``in``, ``&&``, ``||`` and ``*`` follow cel-go everywhere
  (see ``library``). Comprehensions are rare in device selectors.
- Equality of maps and lists holding values of mixed kinds follows the element rule, without
  cel-go's corner where an error inside a list comparison is skipped. Errs toward an error.
"""

from modelplane.cel.device import Device
from modelplane.cel.errors import SelectorError
from modelplane.cel.program import Evaluation, SelectorEvaluator, check_selector, selector_matches

__all__ = ["Device", "Evaluation", "SelectorError", "SelectorEvaluator", "check_selector", "selector_matches"]
