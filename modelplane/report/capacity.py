"""`Suggestions` -> text for people: what `modelplane capacity` prints.

Rendering only (the suggestions come from `modelplane.scheduling.capacity`): one row per
suggestion, the deployments it places, the nodes and cost per hour it adds, and the exact
`--what-if` arguments that apply it; then the deployments no capacity change can place, and why.
"""

from __future__ import annotations

import shlex

from modelplane.report.text import columns
from modelplane.scheduling.capacity import Suggestions


def table(found: Suggestions) -> str:
    if not found.suggestions and not found.unplaceable:
        return "every deployment is fully placed: no capacity change is needed\n"
    sections = []
    if found.suggestions:
        rows = [("PLACES", "ADDED NODES", "ADDED COST", "WHAT-IF")]
        for suggestion in found.suggestions:
            cost = suggestion.to_json()["addedCostPerHour"]
            rows.append((", ".join(suggestion.deployments), f"+{suggestion.added_nodes}",
                         f"+{cost}/h" if cost else "unpriced",
                         " ".join(f"--what-if {shlex.quote(str(edit))}" for edit in suggestion.edits) or "-"))
        sections.append(columns(rows))
    if found.unplaceable:
        sections.append("\n".join(["NO CAPACITY CHANGE PLACES", *(f"{u.deployment}: {u.reason}" for u in found.unplaceable)]))
    return "\n\n".join(sections) + "\n"
