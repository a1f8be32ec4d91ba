"""Names that would collide once rendered, found at validation with both objects named (issue 23).

Compose names a replica's objects `<deployment>-<cluster>-<index>-<engine>` (and a PrefillDecode
replica's endpoint picker `<deployment>-<cluster>-<index>-epp`), so two deployments of a namespace
whose parts join to one string (deployment `a` with engine `b-onprem-0-d`, deployment
`a-onprem-0-b` with engine `d`) would render two objects of one name, which the render refuses
halfway. `rendered_name_collisions` compares every name each deployment may take on any cluster of
the fleet at any replica index below its `replicas` (only for pairs where one deployment's name
starts the other's, or a PrefillDecode engine named `epp`), and two ModelCaches of a namespace that
name one Secret with different keys (compose creates that Secret once per cache). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from modelplane.api.base import ServingMode
from modelplane.api.fleet import InferenceCluster
from modelplane.api.manifests import Manifest, Origin, object_key
from modelplane.api.problems import Problem
from modelplane.api.workload import ModelCache, ModelDeployment

Located = tuple[Manifest, Origin]
PICKER = "epp"
"""The last part of a PrefillDecode replica's endpoint picker's name (`compose.prefill_decode`)."""


def rendered_name_collisions(objects: Sequence[Located]) -> Iterator[Problem]:
    clusters = sorted(obj.name for obj, _ in objects if isinstance(obj, InferenceCluster))
    deployments = {(obj.namespace, obj.name): (obj, origin) for obj, origin in objects
                   if isinstance(obj, ModelDeployment)}
    for (namespace, name), (deployment, origin) in sorted(deployments.items()):
        if _picker_taken(deployment):
            index = next(i for i, e in enumerate(deployment.spec.engines) if e.name == PICKER)
            yield origin.problem(object_key(deployment), ("spec", "engines", index, "name"), (
                f"engine name {PICKER!r} is the name of the replica's endpoint picker in PrefillDecode mode; "
                "name the engine otherwise"), "name-collision")
        # Only a deployment whose name starts another's (at a '-') can share a name with it.
        prefixes = sorted({name[:at] for at, char in enumerate(name) if char == "-"})
        for prefix in prefixes:
            if (namespace, prefix) not in deployments:
                continue
            shorter, shorter_origin = deployments[(namespace, prefix)]
            shared = sorted(_names(shorter, clusters) & _names(deployment, clusters))
            if shared:
                yield shorter_origin.problem(object_key(shorter), ("metadata", "name"), (
                    f"renders an object named {shared[0]!r}, as ModelDeployment {namespace}/{name} does "
                    f"({origin_of(origin)}): their names and engine names join to the same string; rename one of "
                    "them"), "name-collision")
    yield from _cache_secrets(objects)


def origin_of(origin: Origin) -> str:
    return f"{origin.file}:{origin.line}"


def _picker_taken(deployment: ModelDeployment) -> bool:
    return (deployment.spec.serving.mode is ServingMode.PREFILL_DECODE
            and any(engine.name == PICKER for engine in deployment.spec.engines))


def _names(deployment: ModelDeployment, clusters: Sequence[str]) -> set[str]:
    """Every object name of `deployment`'s replicas before truncation (lowercase, as compose names them)."""
    engines = [engine.name for engine in deployment.spec.engines]
    if deployment.spec.serving.mode is ServingMode.PREFILL_DECODE:
        engines.append(PICKER)
    return {f"{deployment.name}-{cluster}-{index}-{engine}".lower() for cluster in clusters
            for index in range(max(deployment.spec.replicas, 1)) for engine in engines}


def _cache_secrets(objects: Sequence[Located]) -> Iterator[Problem]:
    first: dict[tuple[str, str], tuple[ModelCache, Origin]] = {}
    for obj, origin in objects:
        if not isinstance(obj, ModelCache) or obj.spec.hugging_face.auth_secret is None:
            continue
        secret = obj.spec.hugging_face.auth_secret
        seen = first.setdefault((obj.namespace, secret.name), (obj, origin))
        seen_secret = seen[0].spec.hugging_face.auth_secret
        if seen[0] is not obj and seen_secret is not None and seen_secret.key != secret.key:
            yield origin.problem(object_key(obj), ("spec", "huggingFace", "authSecret", "key"), (
                f"ModelCache {seen[0].namespace}/{seen[0].name} ({origin_of(seen[1])}) names Secret {secret.name!r} "
                f"with key {seen_secret.key!r}; Modelplane creates that Secret once per namespace and cluster, so "
                "both caches must read the same key (or name different Secrets)"), "name-collision")
