"""The Secrets engines read: created from stack config, or a warning that names the key that would.

A ModelDeployment's container reads a Secret of its namespace through `env[].valueFrom.secretKeyRef`
(one not marked `optional`). The stack creates such a Secret when
- a ModelCache of the namespace names it as `authSecret` (compose.cache creates it where the cache is
  staged, which is where the deployments that use the cache run), or
- stack config holds its value, `modelplane:secrets.<namespace>.<secret>.<key>` (`configured`):
  then each cluster that runs a deployment reading it gets the Secret, its values placeholders the
  Pulumi layer replaces with the secret config values.
Otherwise the pods would never start (CreateContainerConfigError), so each reference is a warning
at the field that makes it, naming the Secret and the config key. Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from modelplane.api import ModelDeployment, Workloads
from modelplane.compose import names
from modelplane.compose.cache import secret_placeholder
from modelplane.compose.findings import Finding, Loc

SecretKey = tuple[str, str, str]
"""(namespace, Secret name, key), as in the stack config key `modelplane:secrets.<ns>.<name>.<key>`."""


def references(deployment: ModelDeployment) -> Iterator[tuple[Loc, SecretKey]]:
    """Every required Secret key the deployment's containers read, with the field that reads it."""
    for e, engine in enumerate(deployment.spec.engines):
        for m, member in enumerate(engine.members):
            for v, env in enumerate(member.template.container.env):
                ref = env.value_from.secret_key_ref if env.value_from else None
                if ref is not None and not ref.optional:
                    yield (("spec", "engines", e, "members", m, "template", "spec", "containers", 0, "env", v,
                            "valueFrom", "secretKeyRef"), (deployment.namespace, ref.name, ref.key))


def cache_secrets(work: Workloads) -> set[SecretKey]:
    """The Secret keys ModelCaches create."""
    return {(c.namespace, c.spec.hugging_face.auth_secret.name, c.spec.hugging_face.auth_secret.key)
            for c in work.caches if c.spec.hugging_face.auth_secret is not None}


def findings(work: Workloads, configured: Collection[SecretKey]) -> list[Finding]:
    created = cache_secrets(work) | set(configured)
    return [Finding(deployment, loc, f"reads Secret {namespace}/{name} key {key!r}, which this stack does not "
                    f"create: set stack config modelplane:secrets.{namespace}.{name}.{key} (`pulumi config set "
                    f"--secret --path 'modelplane:secrets.{namespace}.{name}.{key}' ...`) to have it created on "
                    "every cluster the deployment runs on, or create it there yourself; until then its pods "
                    "cannot start", "secret-not-created")
            for deployment in work.deployments for loc, (namespace, name, key) in references(deployment)
            if (namespace, name, key) not in created]


def secret_objects(cluster: str, deployments: Collection[ModelDeployment], work: Workloads,
                   configured: Collection[SecretKey]) -> list[dict]:
    """The configured Secrets that `deployments` (those running on `cluster`) read and no ModelCache creates."""
    made = {(namespace, name) for namespace, name, _ in cache_secrets(work)}
    wanted: dict[tuple[str, str], set[str]] = {}
    for deployment in deployments:
        for _, (namespace, name, key) in references(deployment):
            if (namespace, name, key) in configured and (namespace, name) not in made:
                wanted.setdefault((namespace, name), set()).add(key)
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": {"name": name, "namespace": namespace,
                          "labels": {**names.managed(), names.CLUSTER: cluster}},
             "stringData": {key: secret_placeholder(namespace, name, key) for key in sorted(keys)}}
            for (namespace, name), keys in sorted(wanted.items())]
