"""Pulumi mocks for a program that uses modelplane's components: test it in your own pytest, no cloud.

    import pulumi
    from modelplane.testing import ModelplaneMocks

    pulumi.runtime.set_mocks(ModelplaneMocks(), project="platform", stack="test", preview=False)
    # then import or run the program, and assert on what it registered (docs/pulumi.md)

`ModelplaneMocks` answers what the Pulumi engine and the clouds would:
- the `Placement` dynamic resource (Python dynamic providers do not run under plain mocks): its
  provider's `check` places every replica, with the previous placement as olds, then `create`, or
  `diff` and `update` on a later run of the same mocks (their `state` is the stack's), as the engine
  does; in a preview (`preview=True`) the checked inputs are the outputs, as the engine returns them;
- every supported cloud's computed outputs (`COMPUTED`: the GKE and EKS endpoints and CA
  certificates, the AKS cluster's FQDN, the Nebius control plane, the Vultr kubeconfig, ...) and its
  credential and lookup calls (`INVOKES`: AKS admin credentials, AWS availability zones), so every
  kubeconfig resolves;
- the stack's own previous outputs (`stack_outputs`, what the engine's `readStackOutputs` returns);
- every Gateway's `status.addresses` (a Gateway controller's job), `gateway_addresses` by resource
  name, else `DEFAULT_GATEWAY_ADDRESS`.
With `unknown_outputs=True` nothing is computed (a preview of clusters that do not exist yet).
Resource inputs are echoed as outputs, as `pulumi.runtime.Mocks` conventionally does. Every value
is made up and documented here: no test should read meaning into it beyond its shape.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import dill
import pulumi
from pulumi.dynamic import DiffResult

SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""The marker of a secret value in the mocks' inputs (the Pulumi SDK's rpc `_special_sig_key`)."""
AKS_KUBECONFIG = "apiVersion: v1\nkind: Config\n# aks admin with a client certificate\n"
VULTR_KUBECONFIG = "apiVersion: v1\nkind: Config\n# vke client certificate\n"
DEFAULT_GATEWAY_ADDRESS = "203.0.113.9"
COMPUTED: dict[str, dict[str, Any]] = {
    "gcp:container/cluster:Cluster": {"endpoint": "34.118.0.10", "masterAuth": {"clusterCaCertificate": "R0tFLUNB"}},
    "aws:eks/cluster:Cluster": {"endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
                                "certificateAuthority": {"data": "RUtTLUNB"}},
    "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1},
    "azure-native:containerservice:ManagedCluster": {"fqdn": "aks.hcp.westeurope.azmk8s.io"},
    "nebius:index/mk8sV1Cluster:Mk8sV1Cluster": {"status": {"controlPlane": {
        "endpoints": {"publicEndpoint": "pub.mk8s.eu-north1.nebius.cloud"},
        "auth": {"clusterCaCertificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}}}},
    "vultr:index/kubernetes:Kubernetes": {"kubeConfig": base64.b64encode(VULTR_KUBECONFIG.encode()).decode(),
                                          "endpoint": "vke.ewr.vultr.com"},
}
"""Resource type -> what its cloud computes on create (besides the echoed inputs)."""
ECHOED_NAMES = {"gcp:compute/network:Network": None, "azure-native:resources:ResourceGroup": "resourceGroupName",
                "azure-native:containerservice:ManagedCluster": "resourceName"}
"""Resource type -> the input its `name` output echoes (None: the resource's name with a suffix, as GCP adds)."""
INVOKES: dict[str, dict[str, Any]] = {
    "aws:index/getAvailabilityZones:getAvailabilityZones": {"names": ["us-east-2c", "us-east-2a", "us-east-2b"]},
    "azure-native:containerservice:listManagedClusterAdminCredentials": {"kubeconfigs": [
        {"name": "clusterAdmin", "value": base64.b64encode(AKS_KUBECONFIG.encode()).decode()}]},
}
"""Call (invoke) token -> its answer."""


class CheckFailed(Exception):
    """The dynamic provider's check() returned failures: the engine reports them as errors."""


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


def updates(diff: DiffResult, old_inputs: dict[str, Any], new_inputs: dict[str, Any]) -> bool:
    """Whether the engine updates after `diff`: the provider's answer, or, when it answers "unknown"
    (`changes` None), the engine's own comparison of the old and new inputs."""
    return diff.changes if diff.changes is not None else old_inputs != new_inputs


@dataclass
class ModelplaneMocks(pulumi.runtime.Mocks):
    preview: bool = False
    """Answer as `pulumi preview` does: a dynamic resource's outputs are its checked inputs."""
    unknown_outputs: bool = False
    """Compute nothing: every cloud output (kubeconfigs, addresses) stays unknown."""
    gateway_addresses: dict[str, str] = field(default_factory=dict)
    """Gateway resource name (whole, or without its component's name: `gke:serving:Gateway:ns/name`)
    -> the address its controller would assign."""
    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Dynamic resources' id, inputs and outputs by name, carried from one run to the next."""
    calls: list[str] = field(default_factory=list)
    """The dynamic provider methods called, in order: `check`, `diff`, `create`, `update`."""
    stack_outputs: dict[str, Any] = field(default_factory=dict)
    """The stack's outputs as its previous update left them (the engine's `pulumi:pulumi:readStackOutputs`,
    which the program calls on itself in control-cluster mode); empty: the stack never ran."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        if args.token == "pulumi:pulumi:readStackOutputs":
            return {"name": args.args["name"], "outputs": self.stack_outputs, "secretOutputNames": []}
        return INVOKES.get(args.token, {})

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ.startswith("pulumi-python:dynamic"):
            return self.dynamic(args)
        outputs = dict(args.inputs)
        if not self.unknown_outputs:
            outputs.update(self.computed(args.typ, args.name, args.inputs))
        return f"{args.name}-id", outputs

    def computed(self, typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        """What a cloud (or a Gateway controller) computes for a resource on create."""
        found = dict(COMPUTED.get(typ, {}))
        if typ in ECHOED_NAMES:
            echoed = ECHOED_NAMES[typ]
            found["name"] = f"{name}-a1b2c3" if echoed is None else inputs.get(echoed)
        if typ == "kubernetes:gateway.networking.k8s.io/v1:Gateway":
            address = self.gateway_addresses.get(name) or self.gateway_addresses.get(name.split(":", 1)[-1],
                                                                                     DEFAULT_GATEWAY_ADDRESS)
            found["status"] = {"addresses": [{"type": "IPAddress", "value": address}]}
        return found

    def checked(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The checked inputs the engine would record (a hook for tests that simulate engine faults)."""
        return inputs

    def dynamic(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        news = {key: unwrap(value) for key, value in args.inputs.items()}
        provider = dill.loads(base64.b64decode(news["__provider"]))
        news = {key: value for key, value in news.items() if key != "__provider"}
        prior = self.state.get(args.name)
        self.calls.append("check")
        result = provider.check(prior["inputs"] if prior else {}, news)
        if result.failures:
            raise CheckFailed("; ".join(f"{f.property}: {f.reason}" for f in result.failures))
        checked = self.checked(result.inputs)
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
            if diff.replaces:
                raise CheckFailed(f"{args.name}: the engine would replace it ({diff.replaces}); modelplane's "
                                  "Placement is never replaced")
            outputs = prior["outputs"]
            if updates(diff, prior["inputs"], checked):
                self.calls.append("update")
                outputs = provider.update(identifier, prior["outputs"], checked).outs
        self.state[args.name] = {"id": identifier, "inputs": checked, "outputs": outputs}
        return identifier, outputs
