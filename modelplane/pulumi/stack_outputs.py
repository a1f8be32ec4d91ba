"""A stack's outputs as its last update left them, read through the engine's builtin
`pulumi:pulumi:readStackOutputs` invoke (what a `StackReference` reads, without keeping a copy of the
outputs in the reading stack's state). Used for this very stack (`own_stack()`: the last accepted
objects, the gateway addresses exported last) and for the other stacks of the split layout.

A read that meets a checkpoint being written is tried again, a bounded number of times, then fails the
run with the stack's name; any other error fails the run at once. Why: on a `file://` backend the
checkpoint itself is replaced atomically (written to a temporary file, then renamed), but its metadata
sidecar `<stack>.json.attrs` is rewritten in place (gocloud.dev v0.47.0 `blob/fileblob/attrs.go`,
`setAttrs`: `os.Create`, then encode), so a read racing any save of that stack (every step of its own
update, or a parallel `up` of the stack read) can decode an empty sidecar and the engine answers
`failed to load checkpoint: EOF`. Seen in CI: the fleet stack's first `up` in tests/e2e/test_split_stacks.py
failed 0.76 s in. The read has no side effect, so trying again is safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

INVOKE = "pulumi:pulumi:readStackOutputs"
TRANSIENT = "failed to load checkpoint"
"""What the engine's file backend says of a checkpoint it read while it was being saved."""
PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
"""Seconds between tries: 7 tries within about 3 s, far longer than a save of the sidecar takes."""


class StackOutputsError(pulumi.RunError):
    """A stack's outputs cannot be read; the message names the stack and says what the engine said."""


def own_stack() -> str:
    """This stack's fully qualified name, as `readStackOutputs` takes it."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def read_outputs(stack: str, *, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The stack's outputs (plain wire values: secrets come back as plain values, unknowns never); empty
    when the stack has none yet."""
    pauses = iter(PAUSES)
    while True:
        try:
            result = pulumi.runtime.invoke(INVOKE, {"name": stack})
            break
        except Exception as error:  # the SDK raises a bare Exception for a failed invoke
            pause = next(pauses, None)
            if TRANSIENT not in str(error) or pause is None:
                raise StackOutputsError(f"cannot read the outputs of stack {stack}: {error}") from None
            sleep(pause)
    value = result.value if isinstance(result.value, Mapping) else {}
    outputs = value.get("outputs")
    return dict(outputs) if isinstance(outputs, Mapping) else {}
