"""The ML team's kinds: ModelDeployment, ModelCache, ModelService, ModelEndpoint (namespaced).

Field names and meanings follow the seeds (shared/seeds/000-002). A ModelDeployment is `replicas`
complete serving instances; each replica runs every engine; an engine is one Standalone member or a
Leader + Worker gang, each member with a per-node device request (`nodeSelector`) and a curated pod
template whose container `engine` passes through verbatim.

Single-object rules live here as validators (engine shape, prefill/decode pairing, worker only on
Workers, unique names); cross-object rules live in `refs.py`; warnings in `warnings.py`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from urllib.parse import urlsplit
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, Strict, field_validator, model_validator

from modelplane.api.base import (
    API_VERSION,
    Annotations,
    Bool,
    CacheSource,
    DNSLabel,
    DNSSubdomain,
    FieldError,
    LabelSelector,
    LocalRef,
    Model,
    Namespaced,
    NonEmptyStr,
    Phase,
    Role,
    SecretKeyRef,
    ServingMode,
    ServingObjectMeta,
    Str,
    TaintEffect,
    TolerationOperator,
    UserLabels,
    UserObjectMeta,
    bounded,
    checked_string,
    require_unique,
)
from modelplane.api.endpoints import endpoint_host_problem
from modelplane.api.status import ModelDeploymentStatus, ModelServiceStatus, SpecStatus
from modelplane.cel import SelectorError, check_selector

# Kubernetes' DRA limits (k8s.io/api/resource/v1: CELSelectorExpressionMaxLength, DeviceSelectorsMaxSize).
MAX_SELECTOR_LENGTH = 10 * 1024
MAX_SELECTORS = 32


def check_cel(expression: str) -> str:
    """Admit a selector as Kubernetes would (`modelplane.cel` compiles each distinct one once per process)."""
    try:
        check_selector(expression)
    except SelectorError as error:
        where = f" (line {error.line}, column {error.column})" if error.line and error.line > 1 else (
            f" (column {error.column})" if error.column else "")
        raise ValueError(f"invalid CEL selector{where}: {error.message}") from None
    return expression


class DeviceSelector(Model):
    cel: Annotated[Str, Field(min_length=1, max_length=MAX_SELECTOR_LENGTH), AfterValidator(check_cel)]
    """A DRA CEL expression evaluated against one device. Reads device.driver, device.attributes["<domain>"].<name> and
    device.capacity["<domain>"].<name>; quantity() and semver() build comparable values. At most 10 KiB."""


class DeviceRequest(Model):
    """One DRA device request of a member's pods: `count` devices per node, each matching every selector."""

    name: DNSLabel
    """Name of this request. Mirrors a DRA DeviceRequest name; carried through to the ResourceClaim."""
    count: bounded(1, 64) = 1
    """How many matching devices a node must have. For a GPU request this is the per-node GPU count. Defaults to 1."""
    selectors: Annotated[tuple[DeviceSelector, ...], Field(min_length=1, max_length=MAX_SELECTORS)]
    """The CEL selectors a device must all match (1-32)."""


class NodeSelector(Model):
    devices: Annotated[tuple[DeviceRequest, ...], Field(min_length=1, max_length=16)]
    """The DRA device requests of each pod (1-16, unique names); a pool matches only when it satisfies every request."""

    @field_validator("devices")
    @classmethod
    def _unique_requests(cls, devices: tuple[DeviceRequest, ...]) -> tuple[DeviceRequest, ...]:
        require_unique(devices, "name", "request name")
        return devices


_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def check_env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid environment variable name: use letters, digits, '_', '-' "
                         "and '.', not starting with a digit")
    return name


class KeyRef(Model):
    name: DNSSubdomain
    """Name of the Secret or ConfigMap, in the deployment's namespace."""
    key: NonEmptyStr
    """The key to read."""
    optional: Bool | None = None
    """Whether the Secret or ConfigMap, or its key, may be missing."""


class FieldRef(Model):
    field_path: NonEmptyStr
    """A pod field via the downward API, e.g. status.podIP, metadata.name, or metadata.namespace."""
    api_version: Str | None = None
    """The version of the schema fieldPath is written in (v1)."""


class EnvVarSource(Model):
    secret_key_ref: KeyRef | None = None
    """A key of a Secret."""
    config_map_key_ref: KeyRef | None = None
    """A key of a ConfigMap."""
    field_ref: FieldRef | None = None
    """Reference a pod field via the downward API, e.g. status.podIP, metadata.name, or metadata.namespace."""

    @model_validator(mode="after")
    def _exactly_one(self) -> EnvVarSource:
        if sum(ref is not None for ref in (self.secret_key_ref, self.config_map_key_ref, self.field_ref)) != 1:
            raise ValueError("valueFrom sets exactly one of secretKeyRef, configMapKeyRef, fieldRef")
        return self


class EnvVar(Model):
    name: Annotated[Str, AfterValidator(check_env_name), checked_string(None, _ENV_NAME.pattern)]
    """The environment variable's name."""
    value: Str | None = None
    """A literal value; not with valueFrom."""
    value_from: EnvVarSource | None = None
    """Where the value comes from: exactly one source; not with value."""

    @model_validator(mode="after")
    def _value_or_source(self) -> EnvVar:
        if self.value is not None and self.value_from is not None:
            raise FieldError(("valueFrom",), "set value or valueFrom, not both")
        return self


_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?{_PATH_PART}(?:/{_PATH_PART})*"
                    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")
"""An image reference as container runtimes read it (the grammar of distribution/reference)."""


def check_image(image: str) -> str:
    if not _IMAGE.fullmatch(image):
        raise ValueError(f"{image!r} is not an image reference: use [registry[:port]/]path[:tag][@sha256:digest], "
                         "with a lowercase path (e.g. vllm/vllm-openai:v0.23.0)")
    return image


class Capability(StrEnum):
    """A Linux capability an engine may add back: those Pod Security "baseline" admits (every namespace
    Modelplane renders enforces baseline, so any other would make the API server refuse the pod)."""

    AUDIT_WRITE = "AUDIT_WRITE"
    CHOWN = "CHOWN"
    DAC_OVERRIDE = "DAC_OVERRIDE"
    FOWNER = "FOWNER"
    FSETID = "FSETID"
    KILL = "KILL"
    MKNOD = "MKNOD"
    NET_BIND_SERVICE = "NET_BIND_SERVICE"
    SETFCAP = "SETFCAP"
    SETGID = "SETGID"
    SETPCAP = "SETPCAP"
    SETUID = "SETUID"
    SYS_CHROOT = "SYS_CHROOT"


class Capabilities(Model):
    add: Annotated[tuple[Capability, ...], Field(min_length=1, max_length=13)]
    """Capabilities added back after Modelplane drops ALL; only those Pod Security baseline admits."""


class EngineSecurityContext(Model):
    """What an engine template may ask of its container's security context, and nothing more: its user
    and group (root is `runAsUser: 0`, asked for explicitly) and baseline capabilities. Privileged mode,
    privilege escalation, host namespaces and other seccomp/AppArmor profiles are refused as unknown
    fields; every other restricted setting stays on (`compose.hardening`)."""

    run_as_user: bounded(0, 2147483647) | None = None
    """The user id the engine runs as; `0` asks for root. Without it, the image's user (which may be root)."""
    run_as_group: bounded(0, 2147483647) | None = None
    """The group id the engine runs as. Without it, the image's group."""
    capabilities: Capabilities | None = None
    """Capabilities to add back (all are dropped otherwise)."""


class Container(Model):
    name: Str
    """Container name. The container named "engine" is the inference engine."""
    image: Annotated[Str, Field(min_length=1, max_length=1024), AfterValidator(check_image),
                     checked_string(1024, f"^{_IMAGE.pattern}$")]
    """Container image."""
    command: tuple[Str, ...] = ()
    """The entrypoint, verbatim; empty runs the image's."""
    args: tuple[Str, ...] = ()
    """The engine's arguments, verbatim: parallelism, quantization and KV-transfer flags are yours."""
    env: tuple[EnvVar, ...] = ()
    """Environment variables, after the ones Modelplane injects (MODELPLANE_LEADER_ADDRESS and MODELPLANE_RANK in a
    gang), so they may refer to them as $(NAME)."""
    security_context: EngineSecurityContext | None = None
    """The engine's user (`runAsUser: 0` for root), group and added capabilities; nothing else may be loosened.
    Without it the image's user, every capability dropped."""

    @field_validator("name")
    @classmethod
    def _named_engine(cls, name: str) -> str:
        if name != "engine":
            raise ValueError(f"the container is named {name!r}; the single container must be named 'engine' "
                             "(the inference engine)")
        return name


class PodSpec(Model):
    containers: Annotated[tuple[Container, ...], Field(min_length=1, max_length=1)]
    """Exactly one container, named engine."""
    image_pull_secrets: tuple[LocalRef, ...] = ()
    """Secrets in the deployment's namespace for pulling private images."""


_CONFINEMENT_PREFIXES = ("container.apparmor.security.beta.kubernetes.io/", "seccomp.security.alpha.kubernetes.io/",
                         "container.seccomp.security.alpha.kubernetes.io/")
_CONFINED = frozenset({"runtime/default", "docker/default"})


def check_pod_annotations(annotations: dict[str, str]) -> dict[str, str]:
    """Refuse the annotations that loosen a pod's AppArmor or seccomp confinement (`unconfined`, a
    node-local profile): only the runtime's default profile may be named."""
    for key, value in sorted(annotations.items()):
        if (key.startswith(_CONFINEMENT_PREFIXES) or key == "seccomp.security.alpha.kubernetes.io/pod") \
                and value not in _CONFINED:
            raise ValueError(f"annotation {key}: {value!r} would weaken the pod's AppArmor/seccomp confinement; "
                             "Modelplane's pods run with the runtime's default profile (allowed: "
                             f"{', '.join(sorted(_CONFINED))}, or leave it out)")
    return annotations


class PodMetadata(Model):
    labels: UserLabels = Field(default_factory=dict)
    """Labels applied to the member's pods (not the modelplane.ai keys Modelplane sets)."""
    annotations: Annotated[Annotations, AfterValidator(check_pod_annotations)] = Field(default_factory=dict)
    """Annotations applied to the member's pods; never ones that weaken AppArmor or seccomp (`unconfined`)."""


class PodTemplate(Model):
    metadata: PodMetadata = PodMetadata()
    """Metadata applied to the member's pods. Useful for labels and annotations that control cluster-level features
    like service mesh injection."""
    spec: PodSpec
    """Pod spec for this member's engine pods."""

    @property
    def container(self) -> Container:
        return self.spec.containers[0]


class WorkerSpec(Model):
    nodes: bounded(1, 63) = 1
    """How many nodes this member spans - how big the engine is. Each node runs one worker pod, so the engine's gang
    spans 1 (the Leader) plus this many worker pods. Defaults to 1."""


class Member(Model):
    role: Role = Role.STANDALONE
    """The member's role in the engine. Standalone is a lone pod; a Leader coordinates and serves while its Workers
    join it. Defaults to Standalone."""
    node_selector: NodeSelector | None = None
    """The per-node device request for this member's pods: what devices each pod needs from its node. The scheduler
    places the member on a pool whose InferenceClass satisfies it, preferring one pool for the whole engine. claim:
    DRA requests also become the requests of the ResourceClaim the pods bind GPUs through. Omitted, the member
    claims no devices and runs on its engine's pool (a coordinator-only leader); at least one member per engine
    carries one."""
    worker: WorkerSpec | None = None
    """Settings for a Worker member. Valid only on a member whose role is Worker."""
    template: PodTemplate
    """Pod template for this member's engine pods. A curated subset of PodTemplateSpec."""

    @property
    def pods(self) -> int:
        """Pods of this member in one copy of its engine: `worker.nodes` for a Worker, else 1."""
        if self.role is Role.WORKER:
            return self.worker.nodes if self.worker else 1
        return 1


class Engine(Model):
    name: DNSLabel
    """Identifies the engine within the deployment. Becomes part of the composed workload names, so it must be a DNS
    label."""
    copies: bounded(1, 64) = 1
    """How many identical copies of this engine to run per replica, on its cluster. A fixed number, sized once; scaling
    happens by adding replicas (spec.replicas), never by varying copies. Defaults to 1."""
    phase: Phase | None = None
    """The engine's phase in a PrefillDecode deployment, Prefill or Decode. Set only when serving.mode is
    PrefillDecode, where exactly one engine takes each phase."""
    members: Annotated[tuple[Member, ...], Field(min_length=1, max_length=2)]
    """The engine's gang: one Standalone member, or one Leader and one Worker."""

    @model_validator(mode="after")
    def _shape(self) -> Engine:
        roles = sorted(member.role for member in self.members)
        if roles not in ([Role.STANDALONE], sorted([Role.LEADER, Role.WORKER])):
            written = ", ".join(member.role for member in self.members)
            raise FieldError(("members",), f"an engine is exactly one Standalone member, or one Leader and one "
                                           f"Worker; got [{written}]")
        for index, member in enumerate(self.members):
            if member.worker is not None and member.role is not Role.WORKER:
                raise FieldError(("members", index, "worker"),
                                 f"worker may only be set on a Worker member, not a {member.role}")
        if all(member.node_selector is None for member in self.members):
            raise FieldError(("members",), "at least one member of an engine must carry a nodeSelector "
                                           "requesting devices (a GPU request is the only path to a GPU)")
        return self

    @property
    def multi_node(self) -> bool:
        return any(member.role is Role.LEADER for member in self.members)


class Serving(Model):
    mode: ServingMode = ServingMode.UNIFIED
    """Unified serves prefill and decode on one engine. PrefillDecode splits them across two engines, each marking its
    phase as Prefill or Decode. Defaults to Unified."""


class Toleration(Model):
    key: Str | None = None
    """The taint key to tolerate; empty with operator Exists tolerates every taint."""
    operator: TolerationOperator = TolerationOperator.EQUAL
    """Equal (key and value match) or Exists (any value). Defaults to Equal."""
    value: Str | None = None
    """The taint value to match; only with operator Equal."""
    effect: TaintEffect | None = None
    """The taint effect to tolerate; empty tolerates every effect."""

    @model_validator(mode="after")
    def _operator_fields(self) -> Toleration:
        if self.operator is TolerationOperator.EQUAL and not self.key:
            raise FieldError(("key",), "an Equal toleration must set a key (use operator: Exists with no key "
                                       "to tolerate every taint)")
        if self.operator is TolerationOperator.EXISTS and self.value is not None:
            raise FieldError(("value",), "an Exists toleration must not set a value")
        return self


class ModelDeploymentSpec(Model):
    replicas: Annotated[int, Strict(), Field(ge=0)] = 1
    """How many replicas to fan out to. Each replica is a complete serving instance scheduled to one InferenceCluster.
    The scale subresource's replicas: kubectl scale and KEDA (minReplicaCount 0) set it. 0 scales the deployment to
    zero: its ModelService route stays, answering the gateway's error for a backend without endpoints (503; 500 on
    Envoy Gateway), and its ModelCache stays staged. No upper bound beyond what the
    fleet holds: replicas that do not fit stay unscheduled. Defaults to 1."""
    cluster_selector: LabelSelector | None = None
    """Optional label selector to filter InferenceClusters. If omitted, all clusters are candidates."""
    model_cache_ref: LocalRef | None = None
    """Reference to a ModelCache in the same namespace. Optional for single-node engines; recommended for any engine
    that spans multiple nodes, since every pod in the gang mounts it."""
    serving: Serving = Serving()
    """How the deployment is served from the cluster edge to its engines."""
    tolerations: tuple[Toleration, ...] = ()
    """Cluster taints the deployment tolerates (Kubernetes toleration semantics)."""
    engines: Annotated[tuple[Engine, ...], Field(min_length=1, max_length=8)]
    """The inference engines every replica runs (1-8, unique names); the engines of a replica share its cluster."""

    @field_validator("engines")
    @classmethod
    def _unique_engines(cls, engines: tuple[Engine, ...]) -> tuple[Engine, ...]:
        require_unique(engines, "name", "engine name")
        return engines

    @model_validator(mode="after")
    def _phases_follow_mode(self) -> ModelDeploymentSpec:
        if self.serving.mode is ServingMode.PREFILL_DECODE:
            phases = sorted(str(engine.phase) for engine in self.engines)
            if phases != ["Decode", "Prefill"]:
                raise FieldError(("engines",), "serving.mode PrefillDecode needs exactly two engines, one with "
                                               "phase: Prefill and one with phase: Decode; got phases "
                                               f"[{', '.join(str(e.phase or '-') for e in self.engines)}]")
        else:
            for index, engine in enumerate(self.engines):
                if engine.phase is not None:
                    raise FieldError(("engines", index, "phase"),
                                     "phase may only be set when serving.mode is PrefillDecode")
        return self


class ModelDeployment(Namespaced, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["ModelDeployment"] = "ModelDeployment"
    metadata: ServingObjectMeta
    spec: ModelDeploymentSpec
    status: ModelDeploymentStatus | None = None
    """What the control plane last placed and applied; accepted as input and ignored."""

    @property
    def key(self) -> str:
        """`namespace/name`, the deployment's identity across the fleet. The scheduler reads it per
        replica, so it is kept beside the metadata it was made from and made again for other metadata:
        a copy (`model_copy(update={"metadata": ...})` copies what an instance holds) never reads a
        stale key."""
        made = self.__dict__.get("_key")
        if made is None or made[0] is not self.metadata:
            made = self.__dict__["_key"] = (self.metadata, f"{self.namespace}/{self.name}")
        return made[1]


_HF_REPO = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*$")


def check_hf_repo(repo: str) -> str:
    if len(repo) > 200 or not _HF_REPO.fullmatch(repo):
        raise ValueError(f"{repo!r} is not a Hugging Face repository id: use 'owner/name' (e.g. Qwen/Qwen3-8B)")
    return repo


class HuggingFace(Model):
    repo: Annotated[Str, AfterValidator(check_hf_repo), checked_string(200, _HF_REPO.pattern)]
    """The Hugging Face repository id, owner/name (e.g. Qwen/Qwen3-8B)."""
    revision: Annotated[Str, Field(min_length=1, max_length=255)] = "main"
    """The branch, tag or commit to download. Defaults to main."""
    size_gib: bounded(1, 100_000) = Field(alias="sizeGiB")
    """Size of the weights in GiB; it sizes the cache volume."""
    auth_secret: SecretKeyRef | None = None
    """A Secret key in the cache's namespace with a Hugging Face token (gated or private models)."""


class ModelCacheSpec(Model):
    source: CacheSource = CacheSource.HUGGING_FACE
    """Where the weights come from. Defaults to HuggingFace."""
    hugging_face: HuggingFace
    """The Hugging Face repository to stage."""
    cluster_selector: LabelSelector | None = None
    """Clusters the weights may be staged on: a deployment that references the cache runs only on clusters both select.
    Omitted: any cluster."""


class ModelCache(Namespaced, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["ModelCache"] = "ModelCache"
    metadata: UserObjectMeta
    spec: ModelCacheSpec
    status: SpecStatus | None = None
    """Whether the last run planned with this spec, as the control plane last wrote it; accepted as input and ignored."""


class ServiceEndpoint(Model):
    selector: LabelSelector
    """The endpoints of this group: the replicas of ModelDeployments (modelplane.ai/deployment: <name>) and
    ModelEndpoints whose labels match."""
    weight: bounded(1, 1_000_000) = 1
    """The group's share of the traffic, divided across the endpoints it matches. Defaults to 1."""

    @field_validator("selector")
    @classmethod
    def _selects_something(cls, selector: LabelSelector) -> LabelSelector:
        if not selector.match_labels:
            raise FieldError(("matchLabels",), "matchLabels must name at least one label "
                                               "(e.g. modelplane.ai/deployment: <deployment>)")
        return selector


class ModelServiceSpec(Model):
    endpoints: Annotated[tuple[ServiceEndpoint, ...], Field(min_length=1, max_length=32)]
    """Weighted groups of endpoints behind the service's one URL (1-32)."""


class ModelService(Namespaced, Model):
    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["ModelService"] = "ModelService"
    metadata: ServingObjectMeta
    spec: ModelServiceSpec
    status: ModelServiceStatus | None = None
    """Where the service answers, as the control plane last wrote it; accepted as input and ignored."""


_URL = re.compile(r"^https?://[^\s/?#]+(/[^\s]*)?$")


def check_url(url: str) -> str:
    if not _URL.fullmatch(url):
        raise ValueError(f"{url!r} is not an http(s) URL: use http://host[:port]/path or https://...")
    return url


def check_path(path: str) -> str:
    if not path.startswith("/") or any(ch.isspace() for ch in path):
        raise ValueError(f"{path!r} is not a URL path: start with '/' and use no spaces")
    return path


class ModelEndpointSpec(Model):
    url: Annotated[Str, AfterValidator(check_url), checked_string(None, _URL.pattern)]
    """The endpoint's base URL (http:// or https://); never loopback, link-local, a cloud metadata service or a
    name of the cluster's own service domain (`api.endpoints`)."""
    rewrite_path: Annotated[Str, AfterValidator(check_path), checked_string(None, r"^/[^\s]*$")] | None = None
    """The path the service prefix is rewritten to before requests reach the endpoint (its API root)."""
    allow_private_network: Bool = False
    """Allow a private address or DNS name (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7,
    *.internal): the fleet gateway then proxies callers to that network. Off by default."""

    @model_validator(mode="after")
    def _not_inside(self) -> ModelEndpointSpec:
        problem = endpoint_host_problem(urlsplit(self.url).hostname or "", self.allow_private_network)
        if problem:
            raise FieldError(("url",), problem)
        return self


class ModelEndpoint(Namespaced, Model):
    """An endpoint outside the fleet (a hosted API, another cluster) a ModelService can route to."""

    api_version: Literal["modelplane.ai/v1alpha1"] = API_VERSION
    kind: Literal["ModelEndpoint"] = "ModelEndpoint"
    metadata: UserObjectMeta
    spec: ModelEndpointSpec
    status: SpecStatus | None = None
    """Whether the last run planned with this spec, as the control plane last wrote it; accepted as input and ignored."""
