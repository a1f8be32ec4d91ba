"""A mock Pulumi engine for running the real program, and the dynamic provider in the engine's order.

`Engine` is a `pulumi.runtime.Mocks` that records every registration and plays the engine's part
for dynamic resources, as the Pulumi engine does with the python dynamic-provider plugin: it
deserializes `__provider` (dill), calls `check(olds, news)` with the prior checked inputs as olds,
raises on check failures, and then, on `up`, `create` (new) or `diff` + `update` (existing, when
`updates`); on
`preview` it returns the checked inputs as the outputs. Its `state` carries the dynamic resources'
inputs/outputs from one run to the next, like a stack's state file.

Cloud resources get plausible computed outputs on `up`; with `unknown_outputs=True` (a preview of
clusters that do not exist yet) they get none, so every kubeconfig and address is unknown.
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

import dill
import pulumi
import yaml
from pulumi.dynamic import DiffResult
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "__main__.py"
DEV_STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
KUBECONFIG = ("apiVersion: v1\nkind: Config\n# onprem-test-kubeconfig-7f3a9c\n"
              "users: [{name: admin, user: {token: s3cr3t-onprem-token}}]\n")
HF_TOKEN = "hf_test_token_0123456789"
SECRET_VALUES = (KUBECONFIG, "s3cr3t-onprem-token", HF_TOKEN)


class CheckFailed(Exception):
    """The dynamic provider's check() returned failures: the engine reports them as errors."""


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


def unwrap(value: Any) -> Any:
    """A value as the engine passed it, with secret wrappers removed."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return unwrap(value["value"])
        return {key: unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap(item) for item in value]
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_SIG in value


@dataclass
class Engine(pulumi.runtime.Mocks):
    preview: bool = False
    unknown_outputs: bool = False
    drop_placement: bool = False
    """Simulate an engine that could not compute the placement (its output is unknown)."""
    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    registered: list[Registration] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    """The dynamic provider methods called, in order: `check`, `diff`, `create`, `update`."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered.append(Registration(args.typ, args.name, args.inputs, args.provider or "", bool(args.custom)))
        if args.typ.startswith("pulumi-python:dynamic"):
            return self._dynamic(args)
        outputs = dict(args.inputs)
        if not self.unknown_outputs:
            outputs.update(computed(args.typ, args.name))
        return f"{args.name}-id", outputs

    def _dynamic(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        news = {key: unwrap(value) for key, value in args.inputs.items()}
        provider = dill.loads(base64.b64decode(news["__provider"]))
        news = {key: value for key, value in news.items() if key != "__provider"}
        prior = self.state.get(args.name)
        self.calls.append("check")
        result = provider.check(prior["inputs"] if prior else {}, news)
        if result.failures:
            raise CheckFailed("; ".join(f"{f.property}: {f.reason}" for f in result.failures))
        checked = result.inputs
        if self.drop_placement:
            checked = {key: value for key, value in checked.items() if key != "placement"}
        if self.preview:
            return "", checked
        if prior is None:
            self.calls.append("create")
            created = provider.create(checked)
            identifier, outputs = created.id, created.outs
        else:
            identifier = prior["id"]
            self.calls.append("diff")
            diff = provider.diff(identifier, prior["outputs"], checked)
            assert not diff.replaces, "the placement must never be replaced"
            outputs = prior["outputs"]
            if updates(diff, prior["inputs"], checked):
                self.calls.append("update")
                outputs = provider.update(identifier, prior["outputs"], checked).outs
        self.state[args.name] = {"id": identifier, "inputs": checked, "outputs": outputs}
        return identifier, outputs

    def of_type(self, typ: str) -> list[Registration]:
        return [r for r in self.registered if r.typ == typ]

    def named(self, name: str) -> Registration:
        found = [r for r in self.registered if r.name == name]
        assert len(found) == 1, f"{len(found)} resources named {name}"
        return found[0]


def updates(diff: DiffResult, old_inputs: dict[str, Any], new_inputs: dict[str, Any]) -> bool:
    """Whether the engine updates after `diff`: the provider's answer, or, when it answers "unknown"
    (`changes` None), the engine's own comparison of the old and new inputs."""
    return diff.changes if diff.changes is not None else old_inputs != new_inputs


def computed(typ: str, name: str) -> dict[str, Any]:
    """What a cloud would compute for a resource on `up`."""
    if typ == "gcp:container/cluster:Cluster":
        return {"endpoint": "34.118.0.10", "masterAuth": {"clusterCaCertificate": "R0tFLUNB"}}
    if typ == "aws:eks/cluster:Cluster":
        return {"endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com", "certificateAuthority": {"data": "RUtTLUNB"}}
    if typ == "gcp:compute/network:Network":
        return {"name": f"{name}-a1b2c3"}
    if typ == "kubernetes:gateway.networking.k8s.io/v1:Gateway":
        address = GATEWAY_ADDRESSES.get(name.split(":", 1)[-1], "203.0.113.9")  # whatever the component's name
        return {"status": {"addresses": [{"type": "IPAddress", "value": address}]}}
    return {}


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
    pulumi.runtime.set_mocks(engine, project="modelplane", stack="dev", preview=engine.preview, logger=logger,
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
