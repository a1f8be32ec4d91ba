"""The library leaves process state alone: only the entry points touch Python's garbage collector.

`cli.run` and the Pulumi program (`__main__.py`) turn the cyclic collector off for their whole
process, and the Placement provider's `check()` (the entry of the dynamic-provider process) pauses
it while it plans (issue 21). `load`, `place`, `explain`, `render`, `plan_warnings` and the CLI's
`main()` are library calls a platform team makes inside its own process: they must neither turn the
collector off nor on. The test replaces the collector's switches with ones that record every call,
so a function that paused and then restored it still fails.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from modelplane.api import load
from modelplane.cli import main
from modelplane.compose import plan_warnings, render
from modelplane.scheduling import explain, place

DEMO = Path(__file__).resolve().parent.parent / "examples" / "multi-cloud"


@pytest.fixture
def switches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call to the collector's switches, by name (the switches still work)."""
    calls: list[str] = []
    for name in ("disable", "enable", "freeze", "unfreeze"):
        real = getattr(gc, name)
        monkeypatch.setattr(gc, name, lambda real=real, name=name: (calls.append(name), real())[1])
    yield calls


def _load_place_render() -> None:
    manifests = load([DEMO])
    placement = place(manifests.fleet, manifests.workloads)
    again = place(manifests.fleet, manifests.workloads, placement)
    explain(manifests.fleet, manifests.workloads, "ml-team/qwen3-8b", again)
    render(manifests, placement)
    plan_warnings(manifests, placement)


def _cli_main() -> None:
    assert main(["plan", str(DEMO), "--format", "json"]) == 0


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
@pytest.mark.parametrize("call", [_load_place_render, _cli_main], ids=["load, place, explain, render", "cli.main"])
def test_library_calls_leave_the_garbage_collector_alone(call: Callable[[], None], enabled: bool,
                                                         switches: list[str]) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    switches.clear()
    try:
        call()
        assert switches == []
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_placement_provider_check_pauses_the_collector_and_restores_it(switches: list[str]) -> None:
    """check() is the dynamic-provider process's entry: it pauses the collector while it plans, and
    leaves it as it found it."""
    from modelplane.api import dump_objects
    from modelplane.pulumi.placement import PlacementProvider, objects_text

    manifests = load([DEMO])
    assert gc.isenabled()
    switches.clear()
    result = PlacementProvider().check({}, {"objects": objects_text(dump_objects(manifests)), "strict": False})
    assert not result.failures and json.loads(result.inputs["placement"])["replicas"]
    assert switches == ["disable", "enable"]
    assert gc.isenabled()


def test_the_pulumi_program_turns_the_collector_off_for_its_process(switches: list[str]) -> None:
    """`__main__.py` is the program's entry point: it disables the collector once, for good (the test
    harness, whose process goes on, turns it back on afterwards)."""
    from tests.pulumi.harness import Engine, run_program

    assert gc.isenabled()
    switches.clear()
    run_program(Engine(preview=True))
    assert switches[0] == "disable"
    assert "enable" not in switches[:-1]  # nothing in the program turns it back on; the harness does, last
    assert gc.isenabled()
