"""`modelplane.pulumi.stack_outputs` under mocks: a read that meets a checkpoint being saved is tried
again and succeeds; one that keeps meeting it, or fails otherwise, fails the run with the stack's name.
The transient error text is the engine's (pkg/v3@v3.259.0 backend/diy/state.go wraps a failed read of
the checkpoint as "failed to load checkpoint: %w"; the racing sidecar read gives io.EOF), as CI saw it."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from modelplane.pulumi.stack_outputs import INVOKE, PAUSES, StackOutputsError, read_outputs

STACK = "organization/modelplane/east"
RACE = ("invocation of pulumi:pulumi:readStackOutputs returned an error: failed to load checkpoint: EOF")


class Failing(pulumi.runtime.Mocks):
    """Answers `readStackOutputs` with `errors` in turn, then with `outputs`."""

    def __init__(self, errors: list[str], outputs: dict[str, Any]) -> None:
        self.errors = list(errors)
        self.outputs = outputs
        self.tries = 0

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        if args.token != INVOKE or args.args["name"] != STACK:
            raise RuntimeError(f"unexpected invoke {args.token} {args.args}")
        self.tries += 1
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return {"name": STACK, "outputs": self.outputs, "secretOutputNames": []}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        raise RuntimeError("no resource is registered here")


def read(mocks: Failing) -> tuple[dict[str, Any], list[float]]:
    pulumi.runtime.set_mocks(mocks, project="modelplane", stack="fleet", preview=False)
    slept: list[float] = []
    return read_outputs(STACK, sleep=slept.append), slept


@pytest.mark.parametrize("races", [0, 1, 3, len(PAUSES)])
def test_a_read_that_meets_a_save_is_tried_again(races: int) -> None:
    mocks = Failing([RACE] * races, {"gatewayAddress": "10.0.0.7"})
    outputs, slept = read(mocks)
    assert outputs == {"gatewayAddress": "10.0.0.7"}
    assert mocks.tries == races + 1
    assert slept == list(PAUSES[:races])


def test_a_read_that_keeps_meeting_saves_fails_with_the_stack_name() -> None:
    mocks = Failing([RACE] * (len(PAUSES) + 1), {})
    with pytest.raises(StackOutputsError, match=f"cannot read the outputs of stack {STACK}: .*failed to load "
                                                "checkpoint: EOF"):
        read(mocks)
    assert mocks.tries == len(PAUSES) + 1
    assert sum(PAUSES) < 5  # bounded: the run fails within seconds, it does not hang


def test_any_other_error_fails_at_once() -> None:
    mocks = Failing([f"unknown stack {STACK!r}"], {})
    with pytest.raises(StackOutputsError, match="unknown stack"):
        read(mocks)
    assert mocks.tries == 1


def test_a_stack_without_outputs_reads_empty() -> None:
    assert read(Failing([], {}))[0] == {}
