"""Running the real program under the shipped mocks (`modelplane.testing.ModelplaneMocks`), recording.

`Engine` is those mocks plus a record of every registration (`registered`, `of_type`, `named`)
and one fault to simulate (`drop_placement`); it gives the dev stack's Gateways the addresses of
`GATEWAY_ADDRESSES`. `run_program` runs `__main__.py` with the dev stack's config (`dev_config`)
like `pulumi preview` (engine.preview) or `up`; the engine's `state` carries the dynamic
resources from one run to the next, like a stack's state file.
"""

from __future__ import annotations

import base64
import gc
import json
import logging
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor

from modelplane.testing import CheckFailed, ModelplaneMocks, is_secret, unwrap, updates

__all__ = ["CheckFailed", "Engine", "Registration", "Run", "dev_config", "is_secret", "run_program", "unwrap",
           "updates"]

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "__main__.py"
DEV_STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
KUBECONFIG = ("apiVersion: v1\nkind: Config\n# onprem-test-kubeconfig-7f3a9c\n"
              "users: [{name: admin, user: {token: s3cr3t-onprem-token}}]\n")
HF_TOKEN = "hf_test_token_0123456789"
SECRET_VALUES = (KUBECONFIG, "s3cr3t-onprem-token", HF_TOKEN)


@dataclass
class Registration:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str
    custom: bool

    @property
    def provider_name(self) -> str:
        """The logical name of the provider resource this one was registered with ('' if default)."""
        return self.provider.rsplit("::", 1)[0].rsplit("::", 1)[-1] if self.provider else ""


@dataclass
class Engine(ModelplaneMocks):
    """The shipped mocks (`modelplane.testing`), recording every registration."""

    gateway_addresses: dict[str, str] = field(default_factory=lambda: dict(GATEWAY_ADDRESSES))
    drop_placement: bool = False
    """Simulate an engine that could not compute the placement (its output is unknown)."""
    registered: list[Registration] = field(default_factory=list)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered.append(Registration(args.typ, args.name, args.inputs, args.provider or "", bool(args.custom)))
        return super().new_resource(args)

    def checked(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if self.drop_placement:
            return {key: value for key, value in inputs.items() if key != "placement"}
        return inputs

    def of_type(self, typ: str) -> list[Registration]:
        return [r for r in self.registered if r.typ == typ]

    def named(self, name: str) -> Registration:
        found = [r for r in self.registered if r.name == name]
        assert len(found) == 1, f"{len(found)} resources named {name}"
        return found[0]


GATEWAY_ADDRESSES = {
    "gke-us-central:serving:Gateway:modelplane-system/inference": "34.120.0.1",
    "eks-us-west:serving:Gateway:modelplane-system/inference": "a1.elb.us-west-2.amazonaws.com",
    "onprem-us-east:serving:Gateway:modelplane-system/inference": "10.40.0.5",
    "gke-us-central:Gateway:modelplane-system/fleet": "34.120.0.99",
    "_control:Gateway:modelplane-system/fleet": "198.51.100.80",
}
"""A Gateway's address by its logical name without the component's (`pulumi.names`)."""


def dev_config(**overrides: Any) -> tuple[dict[str, str], list[str]]:
    """The dev stack's config as the CLI hands it to the program (strings; objects as JSON), with
    test values for its `secure:` placeholders and a Hugging Face token under modelplane:secrets."""
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    values = yaml.safe_load(DEV_STACK.read_text())["config"]
    values["modelplane:secrets"] = {"secure": json.dumps({"ml-team": {"hf-token": {"HF_TOKEN": HF_TOKEN}}})}
    values.update(overrides)
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, dict) and "secure" in value:
            secret_keys.append(key)
            value = KUBECONFIG if key == "modelplane:onpremKubeconfig" else value["secure"]
        config[key] = value if isinstance(value, str) else json.dumps(value)
    return config, secret_keys


@dataclass
class Run:
    engine: Engine
    outputs: dict[str, Any]
    """The stack outputs; in a preview only the known ones."""
    logs: list[str]
    """Everything the program logged (pulumi.log.*)."""
    urns: list[str]
    """Every registered resource's URN (it carries the parent chain)."""

    def urn(self, name: str) -> str:
        found = [urn for urn in self.urns if urn.endswith(f"::{name}")]
        assert len(found) == 1, f"{len(found)} URNs for {name}"
        return found[0]


def run_program(engine: Engine, config: tuple[dict[str, str], list[str]] | None = None) -> Run:
    """Run the real __main__.py against `engine`, like `pulumi preview` (engine.preview) or `up`."""
    values, secret_keys = config or dev_config()
    logs: list[str] = []
    logger = logging.getLogger(f"pulumi-mock-{id(engine)}")
    logger.propagate = False
    logger.handlers = [_Collect(logs)]
    runtime_settings.set_root_resource(None)  # a fresh Stack per run
    monitor = MockMonitor(engine)
    pulumi.runtime.set_mocks(engine, project="modelplane", stack="dev", organization="organization",
                             preview=engine.preview, logger=logger,
                             monitor=monitor)
    pulumi.runtime.set_all_config(values, secret_keys)
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(MAIN), run_name="__main__")
        exported = runtime_settings.get_root_resource().outputs  # type: ignore[union-attr]
        # One apply per output: in a preview the known ones are kept, the unknown ones left out.
        return pulumi.Output.all(*(pulumi.Output.from_input(value).apply(lambda v, k=key: outputs.update({k: v}))
                                   for key, value in exported.items()))

    enabled = gc.isenabled()
    try:
        program()
    finally:  # the program, a process's entry point, turns the collector off for good; the tests go on
        if enabled:
            gc.enable()
    return Run(engine, outputs, logs, list(monitor.resources))


class _Collect(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())
