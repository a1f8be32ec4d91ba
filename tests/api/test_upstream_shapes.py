"""Every manifest shape the Crossplane-based Modelplane (v0.3.1) publishes, loaded folder by folder.

The fixtures in tests/data/upstream-shapes are ours, written from the field lists of upstream's
published manifests (docs/manifests/{concepts,examples,getting-started,overview,reference} and
e2e/manifests): every field path those use appears in a fixture. Each folder is loaded as a user
would load upstream's folder, and the table says exactly which problems it gets (file, line, code,
severity): none for the shapes we read; a warning for the nested ModelDeployment form and for each
document of another API group; an error where upstream's form needs something this version lacks
(the control cluster) or where a folder holds alternatives of one object (two files declaring the
same ModelDeployment, ModelService or InferenceClass: the duplicate stays an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from modelplane.api import ManifestErrors, Manifests, Problem, load
from modelplane.compose import Settings, render
from modelplane.compose.gateways import traefik
from modelplane.scheduling import place
from tests.compose.schemas import problems

SHAPES = Path(__file__).resolve().parents[1] / "data" / "upstream-shapes"
Found = tuple[str, int, str, str]
"""(file, line, code, severity) of one problem."""


def found(folder: str, strict: bool = False) -> tuple[dict[str, int], list[Found]]:
    """What loading the folder gives: the object counts (empty on errors) and every problem."""
    try:
        manifests = load([SHAPES / folder], strict=strict)
    except ManifestErrors as errors:
        return {}, sorted(_found(p) for p in (*errors.errors, *errors.warnings))
    return manifests.counts(), sorted(_found(p) for p in manifests.warnings)


def _found(problem: Problem) -> Found:
    return Path(problem.file).name, problem.line, problem.code, str(problem.severity)


def nested(file: str, line: int) -> Found:
    return file, line, "nested-form", "warning"


def foreign(file: str, line: int, severity: str = "warning") -> Found:
    return file, line, "foreign-kind", severity


@dataclass
class Case:
    name: str
    folder: str
    counts: dict[str, int]
    problems: list[Found] = field(default_factory=list)


CASES = [
    Case("classes and clusters: GKE, EKS with EFA on a Capacity Block, bring-your-own by Secret", "platform",
         {"InferenceClass": 3, "InferenceCluster": 3}),
    Case("the AKS, Nebius and Vultr blocks", "clouds", {"InferenceClass": 3, "InferenceCluster": 3}),
    Case("caches, the nested deployment forms, an endpoint with a user's modelplane.ai label, services", "models",
         {"ModelCache": 1, "ModelDeployment": 3, "ModelEndpoint": 1, "ModelService": 3},
         [nested("deployments.yaml", 9), nested("deployments.yaml", 32), nested("deployments.yaml", 70)]),
    Case("the control plane's gateway needs spec.cluster without a control cluster; the Namespace is skipped",
         "control-plane", {},
         [foreign("00-namespace.yaml", 1), ("10-gateway.yaml", 7, "control-cluster", "error")]),
    Case("a PodMonitor beside the model is skipped with a warning", "beside-ours", {"ModelDeployment": 1},
         [nested("model.yaml", 5), foreign("podmonitor.yaml", 2)]),
    Case("Crossplane's setup documents are all skipped", "crossplane-setup", {},
         [foreign("setup.yaml", line) for line in (2, 6, 12, 18, 23, 30, 35)]),
    Case("upstream's infrastructure kinds are skipped; its ModelReplica is not a kind we read", "reference-kinds", {},
         [foreign("internal.yaml", 3), foreign("internal.yaml", 8), ("internal.yaml", 14, "kind", "error")]),
    Case("alternatives in one folder stay duplicates", "alternatives", {},
         [("class.yaml", 3, "duplicate", "error"), nested("deployment-sglang.yaml", 5),
          ("deployment-vllm.yaml", 3, "duplicate", "error"), nested("deployment-vllm.yaml", 5),
          ("service.yaml", 3, "duplicate", "error")]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_published_shape_loads_as_the_table_says(case: Case) -> None:
    assert found(case.folder) == (case.counts, sorted(case.problems))


def test_every_shape_folder_is_in_the_table() -> None:
    assert sorted(p.name for p in SHAPES.iterdir() if p.is_dir()) == sorted(case.folder for case in CASES)


@pytest.mark.parametrize("folder", ["beside-ours", "crossplane-setup"])
def test_strict_turns_each_skipped_document_into_an_error(folder: str) -> None:
    lenient = [p for p in found(folder)[1] if p[2] == "foreign-kind"]
    assert found(folder, strict=True)[1] == sorted([*(p[:3] + ("error",) for p in lenient),
                                                    *(p for p in found(folder)[1] if p[2] != "foreign-kind")])


def whole_fleet(tmp_path: Path) -> Manifests:
    """platform, clouds and models together, with upstream's gateway placed on gke-central."""
    gateway = (SHAPES / "control-plane" / "10-gateway.yaml").read_text()
    (tmp_path / "gateway.yaml").write_text(gateway.replace("spec:\n", "spec:\n  cluster: gke-central\n"))
    return load([SHAPES / "platform", SHAPES / "clouds", SHAPES / "models", tmp_path / "gateway.yaml"])


def test_the_shapes_together_plan_and_render_valid_objects(tmp_path: Path) -> None:
    manifests = whole_fleet(tmp_path)
    placement = place(manifests.fleet, manifests.workloads)
    assert placement.replicas, "something is placed"
    rendered = render(manifests, placement)
    addon_objects = [obj for addons in rendered.addons.values() for addon in addons for obj in addon.objects]
    everything = [*(m for ms in rendered.clusters.values() for m in ms), *rendered.gateway, *addon_objects]
    assert {f"{m['kind']}/{m['metadata']['name']}": p for m in everything if (p := problems(m))} == {}
    assert {a.name for a in rendered.addons["gke-central"]} >= {"traefik", "metallb", "metallb-address-pool",
                                                                *(c.name for c in traefik.crds(Settings()))}
