"""The loaded, validated set of manifests: the platform's `Fleet` and the ML teams' `Workloads`.

Both are frozen and sorted by identity (name, or namespace/name), so everything downstream iterates
in a stable order whatever order the files were read in. `Origin` remembers where each object was
written, so later stages can point problems at a file and line too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from modelplane.api.fleet import InferenceClass, InferenceCluster
from modelplane.api.gateway import InferenceGateway
from modelplane.api.problems import Problem, path_text
from modelplane.api.workload import ModelCache, ModelDeployment, ModelEndpoint, ModelService

Loc = tuple[str | int, ...]
Manifest = Union[InferenceClass, InferenceCluster, InferenceGateway, ModelDeployment, ModelCache,
                 ModelService, ModelEndpoint]
ObjectKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name


def object_key(obj: Manifest) -> ObjectKey:
    return obj.kind, obj.metadata.namespace or "", obj.metadata.name


@dataclass(frozen=True)
class Origin:
    """Where an object was written: its file, first line and the line of each field.

    `prefix` maps the model's location onto what the user wrote when the loader rewrote the
    document (the Crossplane-era nested ModelDeployment keeps its fields under spec.template.spec).
    """

    file: str
    line: int
    lines: dict[Loc, int] = field(repr=False)
    prefix: dict[str, Loc] = field(default_factory=dict, repr=False)

    def written(self, loc: Loc) -> Loc:
        if len(loc) >= 2 and loc[0] == "spec" and str(loc[1]) in self.prefix:
            return (*self.prefix[str(loc[1])], *loc[1:])
        return loc

    def line_of(self, loc: Loc) -> int:
        loc = self.written(loc)
        for end in range(len(loc), 0, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return self.line

    def problem(self, key: ObjectKey, loc: Loc, message: str, code: str, **kwargs) -> Problem:
        kind, namespace, name = key
        return Problem(self.file, self.line_of(loc), kind, namespace, name, path_text(self.written(loc)),
                       message, code, **kwargs)


@dataclass(frozen=True)
class Fleet:
    """What the platform team published: clusters, the classes their pools name, the gateway."""

    clusters: tuple[InferenceCluster, ...] = ()
    classes: tuple[InferenceClass, ...] = ()
    gateway: InferenceGateway | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(sorted(self.clusters, key=lambda c: c.name)))
        object.__setattr__(self, "classes", tuple(sorted(self.classes, key=lambda c: c.name)))
        object.__setattr__(self, "_classes", {c.name: c for c in self.classes})
        object.__setattr__(self, "_clusters", {c.name: c for c in self.clusters})

    def cluster(self, name: str) -> InferenceCluster | None:
        return self._clusters.get(name)  # type: ignore[attr-defined]

    def inference_class(self, name: str) -> InferenceClass | None:
        return self._classes.get(name)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Workloads:
    """What the ML teams declared: deployments, the caches they reference, services, endpoints."""

    deployments: tuple[ModelDeployment, ...] = ()
    caches: tuple[ModelCache, ...] = ()
    services: tuple[ModelService, ...] = ()
    endpoints: tuple[ModelEndpoint, ...] = ()

    def __post_init__(self) -> None:
        for name in ("deployments", "caches", "services", "endpoints"):
            items = getattr(self, name)
            object.__setattr__(self, name, tuple(sorted(items, key=lambda o: (o.namespace, o.name))))
        object.__setattr__(self, "_caches", {(c.namespace, c.name): c for c in self.caches})
        object.__setattr__(self, "_deployments", {d.key: d for d in self.deployments})

    def cache_of(self, deployment: ModelDeployment) -> ModelCache | None:
        """The ModelCache a deployment references (the loader checked that it exists)."""
        ref = deployment.spec.model_cache_ref
        return self._caches.get((deployment.namespace, ref.name)) if ref else None  # type: ignore[attr-defined]

    def deployment(self, key: str) -> ModelDeployment | None:
        """The deployment named `namespace/name`."""
        return self._deployments.get(key)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Manifests:
    fleet: Fleet
    workloads: Workloads
    warnings: tuple[Problem, ...] = ()
    origins: dict[ObjectKey, Origin] = field(default_factory=dict, repr=False, compare=False)

    def objects(self) -> tuple[Manifest, ...]:
        fleet, work = self.fleet, self.workloads
        gateway = (fleet.gateway,) if fleet.gateway else ()
        return (*fleet.classes, *fleet.clusters, *gateway, *work.deployments, *work.caches, *work.services,
                *work.endpoints)

    def counts(self) -> dict[str, int]:
        """How many objects of each kind, sorted by kind."""
        counts: dict[str, int] = {}
        for obj in self.objects():
            counts[obj.kind] = counts.get(obj.kind, 0) + 1
        return dict(sorted(counts.items()))

    def origin(self, obj: Manifest) -> Origin | None:
        return self.origins.get(object_key(obj))
