"""`Suggestions` -> text for people: what `modelplane capacity` prints.

Rendering only (the suggestions come from `modelplane.scheduling.capacity`): one row per
suggestion, each shown once: the deployment it places, the nodes and cost per hour it adds and the
`--what-if` arguments it adds to the changes above it (a deployment's suggestions build on the first
suggestion of each deployment before it; `--format json` lists every suggestion's edits in full);
then the deployments no capacity change can place, and why (wrapped). Rows fit `WIDTH` columns: a table that
would be wider is printed as a block per suggestion (the deployment, then what it adds, then each
`--what-if` argument on a line of its own), wider only where one argument is (a pool's name and its
class's can be longer than a line).
"""

from __future__ import annotations

import shlex
import textwrap
from decimal import Decimal

from modelplane.report.text import columns
from modelplane.scheduling.capacity import Suggestion, Suggestions

WIDTH = 120


def table(found: Suggestions, asked: bool = False) -> str:
    """`asked`: the search was only for the deployments named (`capacity --deployment`)."""
    if not found.suggestions and not found.unplaceable:
        return f"every deployment{' asked about' if asked else ''} is fully placed: no capacity change is needed\n"
    sections = []
    if found.suggestions:
        entries: list[tuple[str, str, str, list[str]]] = []  # places, nodes, cost, `--what-if` arguments
        chained = False
        below = Suggestion((), (), 0, {})  # the first suggestion of the deployment before
        first: Suggestion | None = None  # the first suggestion of this deployment
        for suggestion in found.suggestions:
            if first is None or suggestion.deployments[-1] != first.deployments[-1]:
                below, first = first or below, suggestion
            edits = suggestion.edits[len(below.edits):]
            chained = chained or bool(below.edits)
            entries.append((suggestion.deployments[-1], f"+{suggestion.added_nodes - below.added_nodes}",
                            _cost(suggestion, below),
                            [f"--what-if {shlex.quote(str(edit))}" for edit in edits]
                            or ["(placed by the changes above)"]))
        text = columns([("PLACES", "ADDED NODES", "ADDED COST", "WHAT-IF"),
                        *((places, nodes, cost, " ".join(arguments)) for places, nodes, cost, arguments in entries)])
        if max(map(len, text.splitlines())) > WIDTH:
            text = "\n".join("\n".join([places, f"  {nodes} node(s), {cost}", *(f"    {arg}" for arg in arguments)])
                             for places, nodes, cost, arguments in entries)
        if chained:
            text += ("\n\nEach suggestion adds to the first suggestion of every deployment above it: apply those "
                     "edits too (`--format json`\nlists each suggestion's edits in full).")
        sections.append(text)
    if found.unplaceable:
        sections.append("\n".join(["NO CAPACITY CHANGE PLACES", *(
            textwrap.fill(f"{u.deployment}: {u.reason}", WIDTH, subsequent_indent="  ", break_long_words=False,
                          break_on_hyphens=False) for u in found.unplaceable)]))
    return "\n\n".join(sections) + "\n"


def _cost(suggestion: Suggestion, below: Suggestion) -> str:
    """The cost per hour the suggestion adds to `below`'s."""
    if suggestion.added_cost is None or below.added_cost is None:
        return "unpriced"
    added = {currency: amount - below.added_cost.get(currency, Decimal(0))
             for currency, amount in sorted(suggestion.added_cost.items())}
    return ", ".join(f"+{amount} {currency}/h" for currency, amount in added.items() if amount) or "+0/h"
