"""Building blocks shared by every kind: the model base, strict scalar types, names, labels, enums.

Every model is a frozen pydantic v2 model that forbids unknown fields and uses the camelCase names
the manifests use (snake_case in Python). Scalars never coerce (`count: "1"` is an error, as in
Kubernetes): every scalar field uses the strict types below, while lists (read as tuples), maps,
nested models and enums validate from plain YAML. Closed sets are `StrEnum`s. Validators raise
`ValueError` (or `FieldError`, to point below the model) with a message that says what is allowed;
pydantic attaches the location.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, WithJsonSchema
from pydantic.alias_generators import to_camel

from modelplane.api.labels import RESERVED as RESERVED_LABELS
from modelplane.invariants import InvariantError

API_VERSION = "modelplane.ai/v1alpha1"
API_GROUP = "modelplane.ai"


class FieldError(ValueError):
    """A validator's error about one field (or item) below the model being validated."""

    def __init__(self, loc: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.loc = loc


class Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )


Str = Annotated[str, Strict()]
Bool = Annotated[bool, Strict()]


def bounded(low: int, high: int) -> type[int]:
    """A strict integer in [low, high] (bools are not integers here)."""
    return Annotated[int, Strict(), Field(ge=low, le=high)]  # type: ignore[return-value]


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def check_dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a DNS label: use at most 63 lowercase letters, digits and '-', "
                         "starting and ending with a letter or digit")
    return value


def check_dns1035_label(value: str) -> str:
    """A DNS label that starts with a letter: what a Kubernetes Service name (and so any name that
    prefixes one) must be."""
    check_dns_label(value)
    if not value[0].isalpha():
        raise ValueError(f"{value!r} must start with a letter: it prefixes Kubernetes Service names")
    return value


def check_dns_subdomain(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
        raise ValueError(f"{value!r} is not a DNS subdomain: use at most 253 lowercase letters, digits, "
                         "'-' and '.', starting and ending with a letter or digit")
    return value


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a Kubernetes label key (`[prefix/]name`), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"label key {key!r} has an invalid prefix: it must be a DNS subdomain of at most 253 characters"
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (f"label key {key!r} is invalid: the name part must be at most 63 letters, digits, '-', '_' "
                "or '.', starting and ending with a letter or digit")
    return None


def check_labels(labels: dict[str, str]) -> dict[str, str]:
    for key, value in sorted(labels.items()):
        problem = label_key_problem(key)
        if problem:
            raise ValueError(problem)
        if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            raise ValueError(f"label {key}={value!r} has an invalid value: use at most 63 letters, digits, "
                             "'-', '_' or '.', starting and ending with a letter or digit (or empty)")
    return labels


def check_user_labels(labels: dict[str, str]) -> dict[str, str]:
    check_labels(labels)
    reserved = sorted(key for key in labels if key in RESERVED_LABELS)
    if reserved:
        raise ValueError(f"label key {reserved[0]!r} is one Modelplane sets itself; use another key (reserved: "
                         f"{', '.join(sorted(RESERVED_LABELS))})")
    return labels


ANNOTATIONS_LIMIT = 256 * 1024
"""The most bytes of keys and values the Kubernetes API server accepts in one object's annotations."""


def check_annotations(annotations: dict[str, str]) -> dict[str, str]:
    for key in sorted(annotations):
        problem = label_key_problem(key)
        if problem:
            raise ValueError(problem.replace("label key", "annotation key"))
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_LIMIT:
        raise ValueError(f"annotations total {size:,} bytes; Kubernetes accepts at most {ANNOTATIONS_LIMIT:,} "
                         "(256 KiB) of keys and values per object")
    return annotations


def checked_string(max_length: int | None, pattern: str) -> WithJsonSchema:
    """The JSON schema (what the generated CRDs carry) of a string that a validator checks: pydantic cannot
    see inside validators. The validator stays the authority; this only lets an API server refuse early,
    so a pattern may admit what the validator refuses, never the reverse (`None`: no length bound)."""
    bound = {"maxLength": max_length} if max_length is not None else {}
    return WithJsonSchema({"type": "string", **bound, "pattern": pattern})


DNS_LABEL_PATTERN = _DNS_LABEL.pattern
LABEL_KEY_PATTERN = rf"^({_DNS_SUBDOMAIN.pattern[1:-1]}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$"
"""A label key's syntax (`label_key_problem`), as the CRDs check it: the prefix's 253-character bound is
left to the loader."""
LABEL_KEY_MAX = 253 + 1 + 63
DNSLabel = Annotated[str, Strict(), AfterValidator(check_dns_label), checked_string(63, DNS_LABEL_PATTERN)]
DNS1035Label = Annotated[str, Strict(), AfterValidator(check_dns1035_label),
                         checked_string(63, r"^[a-z]([-a-z0-9]*[a-z0-9])?$")]
DNSSubdomain = Annotated[str, Strict(), AfterValidator(check_dns_subdomain), checked_string(253, _DNS_SUBDOMAIN.pattern)]
NonEmptyStr = Annotated[str, Strict(), Field(min_length=1, max_length=253)]
Labels = Annotated[dict[str, Str], AfterValidator(check_labels)]
UserLabels = Annotated[dict[str, Str], AfterValidator(check_user_labels)]
Annotations = Annotated[dict[str, Str], AfterValidator(check_annotations)]


class LabelSelector(Model):
    match_labels: Labels = Field(default_factory=dict)
    """Labels the selected object must carry: every key with exactly this value."""

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match_labels.items())


class ObjectMeta(Model):
    """`metadata` of a cluster-scoped object; `namespace` is refused by the loader for those kinds."""

    name: DNSLabel
    namespace: DNSLabel | None = None
    labels: Labels = Field(default_factory=dict)
    annotations: Annotations = Field(default_factory=dict)


class UserObjectMeta(ObjectMeta):
    """`metadata` of an ML team's object: its labels may not use the keys Modelplane sets (`labels.RESERVED`)."""

    labels: UserLabels = Field(default_factory=dict)


class ServingObjectMeta(UserObjectMeta):
    """`metadata` of a ModelDeployment or ModelService, whose name prefixes Service names."""

    name: DNS1035Label


class Named:
    """`name` of any kind; `Namespaced` adds the namespace (the loader always sets it)."""

    metadata: ObjectMeta

    @property
    def name(self) -> str:
        return self.metadata.name


class Namespaced(Named):
    @property
    def namespace(self) -> str:
        namespace = self.metadata.namespace
        if namespace is None:  # read for every key of every object: no message built on the way
            raise InvariantError(f"{type(self).__name__} {self.name}: the loader defaults namespaces")
        return namespace


class LocalRef(Model):
    name: DNSLabel
    """Name of the object, in the same namespace."""


class SecretKeyRef(Model):
    name: DNSSubdomain
    """Name of the Secret, in the same namespace."""
    key: Annotated[str, Strict(), Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
    """The key of the Secret that holds the value."""


# Enums: the closed sets of the API, spelled as in the manifests.

class Role(StrEnum):
    STANDALONE = "Standalone"
    LEADER = "Leader"
    WORKER = "Worker"


class Claim(StrEnum):
    DRA = "DRA"
    SYNTHETIC = "Synthetic"


class ServingMode(StrEnum):
    UNIFIED = "Unified"
    PREFILL_DECODE = "PrefillDecode"


class Phase(StrEnum):
    PREFILL = "Prefill"
    DECODE = "Decode"


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(StrEnum):
    EXISTS = "Exists"
    EQUAL = "Equal"


class ClusterSource(StrEnum):
    GKE = "GKE"
    EKS = "EKS"
    AKS = "AKS"
    NEBIUS = "Nebius"
    VULTR = "Vultr"
    EXISTING = "Existing"


class Provider(StrEnum):
    """The clouds an InferenceClass can say how to provision on (every ClusterSource but Existing)."""

    GKE = "GKE"
    EKS = "EKS"
    AKS = "AKS"
    NEBIUS = "Nebius"
    VULTR = "Vultr"


class CredentialsType(StrEnum):
    """Spelled as in Crossplane-era manifests; both kinds name a credentials set the same way here."""

    PROVIDER_CONFIG = "ProviderConfig"
    CLUSTER_PROVIDER_CONFIG = "ClusterProviderConfig"


class IdentityType(StrEnum):
    GOOGLE_APPLICATION_CREDENTIALS = "GoogleApplicationCredentials"
    AWS_WEB_IDENTITY_CREDENTIALS = "AWSWebIdentityCredentials"
    NEBIUS_SERVICE_ACCOUNT_CREDENTIALS = "NebiusServiceAccountCredentials"


class FabricType(StrEnum):
    NONE = "None"
    EFA = "EFA"
    INFINIBAND = "InfiniBand"


class CacheSource(StrEnum):
    HUGGING_FACE = "HuggingFace"


def require_unique(items: tuple[Model, ...], field: str, what: str) -> None:
    """Raise a FieldError at the second item whose `field` repeats an earlier one."""
    first: dict[object, int] = {}
    for index, item in enumerate(items):
        value = getattr(item, field)
        if value in first:
            alias = type(item).model_fields[field].alias or field
            raise FieldError((index, alias), f"duplicate {what} {value!r} (also at index {first[value]}); "
                                             f"each {what} must be unique")
        first[value] = index
