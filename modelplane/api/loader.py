"""Loading: files and directories of kubectl-style YAML -> one validated, immutable `Manifests`.

`load(paths)` is the only function in the core that touches the file system: it reads files and
directories (recursively, `*.yaml`/`*.yml`, hidden entries skipped, sorted) and hands their text to
`load_sources`, which is pure. Every problem is collected, not just the first; if any is an error,
`ManifestErrors` is raised with all of them (and the warnings), sorted by file and line. Bad input
never escapes as anything else.

A document of another API group (a Namespace, a PodMonitor, a Crossplane package kept beside the
modelplane.ai documents), or a mapping with neither apiVersion nor kind (a Helm values file,
Pulumi.yaml, a CI workflow), is skipped with one `foreign-kind` warning; `strict=True` makes it an
error. Everything else about validation is the same either way.

`control_cluster=True` says the fleet has a control cluster (control-cluster mode), so an
InferenceGateway without `spec.cluster` runs there (`api.gateway.CONTROL_CLUSTER`); by default
there is none and such a gateway is an error at `spec.cluster`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from modelplane.api.base import API_GROUP, API_VERSION
from modelplane.api.documents import Document, parse_documents
from modelplane.api.fleet import InferenceClass, InferenceCluster
from modelplane.api.gateway import InferenceGateway
from modelplane.api.guards import guard_problems
from modelplane.api.manifests import Fleet, Manifest, Manifests, ObjectKey, Origin, Workloads, object_key
from modelplane.api.messages import describe
from modelplane.api.problems import ManifestErrors, Problem, Severity
from modelplane.api.refs import Located, check_references
from modelplane.api.workload import ModelCache, ModelDeployment, ModelEndpoint, ModelService

KINDS: dict[str, type[Manifest]] = {
    cls.model_fields["kind"].default: cls  # type: ignore[misc]
    for cls in (InferenceClass, InferenceCluster, InferenceGateway, ModelDeployment, ModelCache, ModelService,
                ModelEndpoint)
}
NAMESPACED = frozenset({"ModelDeployment", "ModelCache", "ModelService", "ModelEndpoint"})
DEFAULT_NAMESPACE = "default"
SUFFIXES = (".yaml", ".yml")
FOREIGN_KIND = "foreign-kind"
"""The code of the problem a document of another API group gets (a warning, an error when strict)."""
NOT_KUBERNETES = ("not a Kubernetes object (no apiVersion, no kind: a Helm values file, Pulumi.yaml or CI workflow "
                  "kept beside the manifests?): skipped")


def load(paths: Sequence[str | Path], *, strict: bool = False, control_cluster: bool = False) -> Manifests:
    """Read and validate manifests from files and directories; raise ManifestErrors on any error."""
    sources, problems = read_sources(paths)
    return load_sources(sources, problems, strict=strict, control_cluster=control_cluster)


def read_sources(paths: Sequence[str | Path]) -> tuple[list[tuple[str, str]], list[Problem]]:
    sources: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            # Not `is_file()`: a dangling symlink or an unreadable entry named *.yaml is an error
            # (skipped, its deployments would look deleted), a directory named *.yaml is not a file.
            files = sorted(f for f in path.rglob("*") if f.suffix in SUFFIXES and not f.is_dir()
                           and not any(part.startswith(".") for part in f.relative_to(path).parts))
            if not files:
                problems.append(Problem(str(given), 0, message="directory holds no *.yaml or *.yml manifests",
                                        code="empty"))
        elif path.is_file() or path.exists():
            files = [path]
        else:
            dangling = " (a symlink to a missing file)" if path.is_symlink() else ""
            problems.append(Problem(str(given), 0, message=f"no such file or directory{dangling}", code="missing-file"))
            continue
        for file in files:
            text, problem = _read_text(file)
            if problem:
                problems.append(problem)
            else:
                sources.append((str(file), text))
    return sources, problems


def _read_text(file: Path) -> tuple[str, Problem | None]:
    if file.exists() and not file.is_file():  # a FIFO or a device would block or never end
        return "", Problem(str(file), 0, message="is not a regular file", code="unreadable")
    try:
        data = file.read_bytes()
    except OSError as error:
        dangling = " (a symlink to a missing file)" if file.is_symlink() and not file.exists() else ""
        return "", Problem(str(file), 0, message=f"cannot be read: {error.strerror}{dangling}", code="unreadable")
    if b"\0" in data:
        return "", Problem(str(file), 0, message="is a binary file, not YAML text", code="binary")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return "", Problem(str(file), line, message="is not UTF-8 text; save it as UTF-8", code="encoding")


def load_sources(sources: Iterable[tuple[str, str]], problems: Iterable[Problem] = (), *,
                 strict: bool = False, control_cluster: bool = False) -> Manifests:
    """Validate manifests given as (file name, text) pairs. Pure: no I/O."""
    found = list(problems)
    documents: list[Document] = []
    for file, text in sources:
        parsed, parse_problems = parse_documents(file, text)
        found.extend(parse_problems)
        if not parsed and not parse_problems:
            found.append(Problem(file, 0, message="contains no manifests", code="empty"))
        documents.extend(parsed)
    return _validate(documents, found, strict, control_cluster)


def load_objects(objects: Iterable[Any], source: str = "<objects>", *, control_cluster: bool = False) -> Manifests:
    """Validate manifests given as plain data (e.g. `dump_objects` output carried through Pulumi state);
    problems name `source` and the object's position instead of a file and line."""
    documents = [Document(source, index + 1, obj, {}) for index, obj in enumerate(objects)]
    return _validate(documents, [], True, control_cluster)


def dump_objects(manifests: Manifests) -> list[dict[str, Any]]:
    """Every object as plain JSON-ready data in its manifest form; `load_objects` reads it back.
    Observed `status` is left out: it is never an input of the placement."""
    return [obj.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"status"})
            for obj in manifests.objects()]


def _validate(documents: Sequence[Document], found: list[Problem], strict: bool, control_cluster: bool) -> Manifests:
    located: list[Located] = []
    declared: set[ObjectKey] = set()
    for document in documents:
        read = read_manifest(document)
        found.extend(read.problems)
        if read.declared:
            declared.add(read.declared)
        if read.obj is not None:
            located.append((read.obj, read.origin))
    found.extend(check_references(located, declared, control_cluster))
    if strict:
        found = [replace(p, severity=Severity.ERROR) if p.code == FOREIGN_KIND else p for p in found]
    errors = [p for p in found if p.severity is Severity.ERROR]
    warnings = [p for p in found if p.severity is Severity.WARNING]
    if errors:
        raise ManifestErrors(errors, warnings)
    return assemble(located, warnings)


def assemble(located: Sequence[Located], warnings: Sequence[Problem] = ()) -> Manifests:
    objects = [obj for obj, _ in located]

    def of(cls: type) -> list[Any]:
        return [obj for obj in objects if isinstance(obj, cls)]

    gateways = of(InferenceGateway)
    fleet = Fleet(clusters=tuple(of(InferenceCluster)), classes=tuple(of(InferenceClass)),
                  gateway=gateways[0] if gateways else None)
    workloads = Workloads(deployments=tuple(of(ModelDeployment)), caches=tuple(of(ModelCache)),
                          services=tuple(of(ModelService)), endpoints=tuple(of(ModelEndpoint)))
    origins = {object_key(obj): origin for obj, origin in located}
    return Manifests(fleet, workloads, tuple(sorted(warnings)), origins)


@dataclass(frozen=True)
class Read:
    """What one document yields: the object if it is valid, and the key it declares either way
    (so a reference to an object with errors of its own is not reported as a broken reference)."""

    obj: Manifest | None
    origin: Origin
    problems: list[Problem]
    declared: ObjectKey | None = None


def read_manifest(document: Document) -> Read:
    """One YAML document -> a validated object, or the problems that keep it from being one."""
    origin = Origin(document.file, document.line, document.lines)
    data = document.data
    if not isinstance(data, dict):
        got = "a list" if isinstance(data, list) else f"{type(data).__name__} {data!r}"[:60]
        return Read(None, origin, [Problem(document.file, document.line, code="not-a-mapping", message=(
            f"a manifest is a mapping with apiVersion, kind, metadata and spec; got {got}"))])
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    kind = data.get("kind")
    key: ObjectKey = (kind if isinstance(kind, str) else "", _text(metadata.get("namespace")),
                      _text(metadata.get("name")))
    given = data.get("apiVersion")
    if given is None and kind is None:
        return Read(None, origin, [Problem(document.file, document.line, code=FOREIGN_KIND, severity=Severity.WARNING,
                                           message=NOT_KUBERNETES)])
    if isinstance(given, str) and given.rpartition("/")[0] != API_GROUP:
        return Read(None, origin, [origin.problem(key, (), (
            f"not a modelplane.ai kind ({given}): apply it with kubectl or declare it in your Pulumi program"),
            FOREIGN_KIND, severity=Severity.WARNING)])
    if given != API_VERSION:
        message = (f"apiVersion is required: {API_VERSION}" if given is None else
                   f"unknown apiVersion {given!r}; Modelplane reads {API_VERSION}")
        return Read(None, origin, [origin.problem(key, ("apiVersion",), message, "api-version")])
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        allowed = ", ".join(sorted(KINDS))
        message = f"kind is required; one of {allowed}" if kind is None else f"unknown kind {kind!r}; one of {allowed}"
        return Read(None, origin, [origin.problem(key, ("kind",), message, "kind")])

    problems: list[Problem] = []
    data = dict(data)
    if kind in NAMESPACED:
        if isinstance(data.get("metadata"), dict) and data["metadata"].get("namespace") is None:
            data["metadata"] = {**data["metadata"], "namespace": DEFAULT_NAMESPACE}
            key = (kind, DEFAULT_NAMESPACE, key[2])
    elif "namespace" in metadata:
        problems.append(origin.problem(key, ("metadata", "namespace"),
                                       f"{kind} is cluster-scoped: remove metadata.namespace", "cluster-scoped"))
        key = (kind, "", key[2])
    problems.extend(guard_problems(data, origin, key))
    if kind == "ModelDeployment":
        data, origin, nested_problems = _flatten_nested_form(data, origin, key)
        problems.extend(nested_problems)
    try:
        obj = cls.model_validate(data)
    except ValidationError as error:
        for detail in error.errors():
            described = describe(detail, cls)
            if described:
                problems.append(origin.problem(key, *described, detail["type"]))
        return Read(None, origin, problems, key)
    valid = not any(p.severity is Severity.ERROR for p in problems)
    return Read(obj if valid else None, origin, problems, key)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _flatten_nested_form(data: dict[str, Any], origin: Origin, key: ObjectKey
                         ) -> tuple[dict[str, Any], Origin, list[Problem]]:
    """Read a Crossplane-era ModelDeployment (`spec.template.spec`) as the flat form, with a warning.

    Upstream Modelplane nests everything but `replicas` under `spec.template.spec` and the labels it
    stamps on replicas under `spec.template.metadata.labels`; the flat form keeps those fields under
    `spec` and the labels in `metadata.labels`. Problems keep pointing at what the user wrote.
    """
    spec = data.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict) or "engines" in spec:
        return data, origin, []
    problems = [origin.problem(key, ("spec", "template"), (
        "spec.template.spec is the nested form of the Crossplane-based Modelplane; write the flat form: "
        "engines, modelCacheRef, serving, clusterSelector and tolerations directly under spec, and "
        "template.metadata.labels as metadata.labels"), "nested-form", severity=Severity.WARNING)]
    flat = {name: value for name, value in spec.items() if name != "template"}
    prefix: dict[str, tuple[str | int, ...]] = {}
    for name, value in template["spec"].items():
        if name in flat:
            problems.append(origin.problem(key, ("spec", "template", "spec", name),
                                           f"{name} is set both in spec and in spec.template.spec; keep one",
                                           "nested-form"))
            continue
        flat[name] = value
        prefix[name] = ("spec", "template", "spec")
    for name in sorted(set(template) - {"metadata", "spec"}):
        problems.append(origin.problem(key, ("spec", "template", name),
                                       f"unknown field {name!r}; allowed here: metadata, spec", "extra_forbidden"))
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template.get("metadata"), dict) else None
    metadata = dict(data.get("metadata") or {})
    if isinstance(labels, dict):
        clashing = sorted(k for k in labels if k in (metadata.get("labels") or {}) and metadata["labels"][k] != labels[k])
        for label in clashing:
            problems.append(origin.problem(key, ("spec", "template", "metadata", "labels", label),
                                           f"label {label!r} differs from metadata.labels; keep one value",
                                           "nested-form"))
        metadata["labels"] = {**labels, **(metadata.get("labels") or {})}
    nested = Origin(origin.file, origin.line, origin.lines, prefix)
    return {**data, "metadata": metadata, "spec": flat}, nested, problems
