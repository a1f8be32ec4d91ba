"""One explanation of a short deployment, shown alike by `explain`, the status condition and the PR comment.

examples/scaled.yaml asks for three replicas of qwen3-8b on the starter cluster's L4 pool of two
nodes: the third has no place. The scheduler keeps `Briefing.brief(...).lines()` as the deployment's
reasons; `explain` words `diagnose(...).brief()`; the status condition Scheduled and the markdown
comment show the reasons the placement keeps. All four must carry the same lines (issue 21).
"""

from __future__ import annotations

from pathlib import Path

from modelplane.api import load
from modelplane.compose.status_documents import deployment_status
from modelplane.report.plan import markdown
from modelplane.scheduling import Brief, explain, place

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = "ml-team/qwen3-8b"


def test_explain_the_status_and_the_comment_show_the_same_brief() -> None:
    manifests = load([EXAMPLES / "qwen3-8b" / "fleet.yaml", EXAMPLES / "scaled.yaml"])
    placement = place(manifests.fleet, manifests.workloads)
    kept = placement.deployments[KEY].reasons
    brief = explain(manifests.fleet, manifests.workloads, KEY).brief()
    assert isinstance(brief, Brief) and brief.closest is not None
    # One pool of two nodes, both held: no cluster fits, the closest miss is that pool's capacity.
    assert (brief.clusters, brief.fitting, brief.closest.where) == (1, 0, "starter/l4")
    assert kept == brief.lines()
    assert kept[0].startswith(f"0/1 clusters can host another replica of {KEY}: 1 pool(s) had too few free nodes")

    printed = explain(manifests.fleet, manifests.workloads, KEY).lines()
    assert printed[1:3] == list(kept)

    deployment = manifests.workloads.deployment(KEY)
    assert deployment is not None
    scheduled = deployment_status(deployment, placement, None).conditions[0]
    assert scheduled.message == "; ".join(("2/3 replicas scheduled", *kept))

    comment = markdown(manifests.fleet, placement)
    assert all(f"- {line}\n" in comment for line in kept)
