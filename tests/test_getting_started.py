"""The staged getting-started tour (examples/getting-started), run stage by stage as its README says.

Each stage is planned with the CLI from the folders up to it and, from stage 3 on, the previous
stage's `plan --format json` as `--state`, exactly the README's commands. What is checked is what
the tour promises (seed 001, "Get started"): the first replica never moves, the new one lands on an
A100 region, one ModelService URL spans both. Every object the last stage renders validates against
the published schemas, and the README's printed plan is the CLI's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.cli import main
from modelplane.compose import render
from modelplane.scheduling import Placement
from tests.compose.schemas import problems

TOUR = Path(__file__).parent.parent / "examples" / "getting-started"
STAGES = ["1-platform", "2-model", "3-scale-platform", "4-scale-model"]


def paths(stage: int) -> list[str]:
    """The folders that make up stage `stage` (1-based)."""
    return [str(TOUR / folder) for folder in STAGES[:stage]]


def demo_warnings_only(err: str) -> bool:
    """Whether `err` holds nothing but the warning the tour's plain-HTTP gateway (a demo) asks for."""
    return all("spec.plainHTTP: the fleet gateway serves plain HTTP" in line for line in err.splitlines())


def plan(capsys: pytest.CaptureFixture[str], stage: int, state: Path | None, out: Path) -> Placement:
    argv = ["plan", *paths(stage), "--format", "json", "--out", str(out)]
    assert main([*argv, *(["--state", str(state)] if state else [])]) == 0
    assert demo_warnings_only(capsys.readouterr().err), "no stage has another warning"
    return Placement.from_json(json.loads(out.read_text()))


def where(placement: Placement) -> dict[str, list[tuple[str, int, str]]]:
    """deployment -> [(cluster, index, pool)]."""
    found: dict[str, list[tuple[str, int, str]]] = {}
    for replica in placement.replicas:
        [members] = replica.engines.values()
        found.setdefault(replica.deployment, []).append((replica.cluster, replica.index,
                                                         next(iter(members.values())).pool))
    return found


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Placement]:
    """Each stage's placement, planned in order with the previous one as state; and stage 3 without."""
    directory = tmp_path_factory.mktemp("tour")
    placements: dict[str, Placement] = {}
    state: Path | None = None
    for stage in range(1, len(STAGES) + 1):
        out = directory / f"stage{stage}.json"
        argv = ["plan", *paths(stage), "--format", "json", "--out", str(out)]
        assert main([*argv, *(["--state", str(state)] if stage > 2 and state else [])]) == 0
        placements[STAGES[stage - 1]] = Placement.from_json(json.loads(out.read_text()))
        state = out
    out = directory / "stage3-fresh.json"
    assert main(["plan", *paths(3), "--format", "json", "--out", str(out)]) == 0
    placements["3-scale-platform without state"] = Placement.from_json(json.loads(out.read_text()))
    return placements


def test_the_stages_are_the_folders_and_each_only_adds() -> None:
    assert sorted(p.name for p in TOUR.iterdir() if p.is_dir()) == STAGES
    keys = [(obj.kind, getattr(obj, "namespace", ""), obj.name) for stage in STAGES
            for obj in load([TOUR / stage]).objects()]
    assert len(keys) == len(set(keys)), "no object is declared in two stages"


def test_every_stage_loads_without_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    for stage in range(1, len(STAGES) + 1):
        assert main(["validate", *paths(stage)]) == 0
        assert demo_warnings_only(capsys.readouterr().err)


def test_stage_1_is_a_starter_cluster_with_an_l4_pool_and_nothing_placed(tour: dict[str, Placement]) -> None:
    fleet = load(paths(1)).fleet
    assert [(c.name, [(p.name, p.class_name) for p in c.spec.node_pools]) for c in fleet.clusters] == [
        ("starter", [("l4", "gke-l4-1x-g2")])]
    assert tour["1-platform"].replicas == ()


def test_stage_2_serves_the_model_on_the_l4(tour: dict[str, Placement]) -> None:
    assert where(tour["2-model"]) == {"ml-team/qwen-demo": [("starter", 0, "l4")]}


def test_the_first_replica_never_moves(tour: dict[str, Placement]) -> None:
    for stage in ("3-scale-platform", "4-scale-model"):
        assert where(tour[stage])["ml-team/qwen-demo"] == [("starter", 0, "l4")], stage


def test_without_state_stage_3_would_move_it_as_the_readme_warns(tour: dict[str, Placement]) -> None:
    assert where(tour["3-scale-platform without state"]) == {"ml-team/qwen-demo": [("gpu-us-east", 0, "a100")]}


def test_the_new_replica_lands_on_an_a100_region(tour: dict[str, Placement]) -> None:
    fleet = load(paths(4)).fleet
    [(cluster, _, pool)] = where(tour["4-scale-model"])["ml-team/qwen-west"]
    found = fleet.cluster(cluster)
    assert found is not None and found.labels["modelplane.ai/region"] == "us-west"
    node_pool = found.pool(pool)
    assert node_pool is not None and node_pool.class_name == "gke-a100-40-1x"
    assert all(status.scheduled == status.desired for status in tour["4-scale-model"].deployments.values())


def fleet_route(stage: int, placement: Placement) -> tuple[dict, list]:
    rendered = render(load(paths(stage)), placement)
    assert [w.code for w in rendered.warnings] == ["plain-http-gateway"]
    route = next(m for m in rendered.gateway if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == "qwen")
    return route, list(rendered.gateway)


def test_one_model_service_url_spans_both_regions(tour: dict[str, Placement]) -> None:
    before, _ = fleet_route(2, tour["2-model"])
    after, objects = fleet_route(4, tour["4-scale-model"])
    assert before["spec"]["rules"][0]["matches"] == after["spec"]["rules"][0]["matches"] == [
        {"path": {"type": "PathPrefix", "value": "/ml-team/qwen/"}}]
    assert [ref["name"] for ref in before["spec"]["rules"][0]["backendRefs"]] == ["qwen-gateway-starter"]
    refs = {ref["name"]: ref["weight"] for ref in after["spec"]["rules"][0]["backendRefs"]}
    assert refs == {"qwen-gateway-gpu-us-west": 1, "qwen-gateway-starter": 1}
    slices = {m["metadata"]["name"] for m in objects if m["kind"] == "EndpointSlice"}
    assert slices == set(refs)


def test_every_object_of_the_last_stage_validates(tour: dict[str, Placement]) -> None:
    rendered = render(load(paths(4)), tour["4-scale-model"])
    addon_objects = [obj for addons in rendered.addons.values() for addon in addons for obj in addon.objects]
    everything = [*(m for ms in rendered.clusters.values() for m in ms), *rendered.gateway, *addon_objects]
    assert {f"{m['kind']}/{m['metadata']['name']}": found for m in everything if (found := problems(m))} == {}


def test_the_readme_shows_what_the_last_plan_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan(capsys, 2, None, tmp_path / "stage2.json")
    plan(capsys, 3, tmp_path / "stage2.json", tmp_path / "stage3.json")
    assert main(["plan", *paths(4), "--state", str(tmp_path / "stage3.json")]) == 0
    printed = capsys.readouterr().out
    readme = (TOUR / "README.md").read_text()
    assert printed.strip() in readme
