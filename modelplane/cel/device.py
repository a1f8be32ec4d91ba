"""The CEL view of one InferenceClass device, built once and shared by every selector.

Contract: ``Device.from_class_device(mapping)`` reads only what a selector can see (the driver,
the typed attributes and the capacity quantities), so two devices with the same content from
different classes are equal and hash alike, and share memoized evaluations.

Invariants (Kubernetes' ``DeviceMatches`` in dynamic-resource-allocation/cel/compile.go):
- A bare attribute or capacity name belongs to the driver's domain; ``domain/name`` to ``domain``.
- ``device.attributes[d]`` and ``device.capacity[d]`` of an unknown domain are an empty map, so
  ``device.attributes["other.com"].x`` fails with "no such key: x", while
  ``"other.com" in device.attributes`` is false.
- A version attribute that is not a semantic version, or a capacity that is not a quantity, makes
  every evaluation against this device an error (``defect``), as in Kubernetes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celpy.celtypes import BoolType, IntType, MapType, StringType

from modelplane.cel.quantity import QuantityError, parse_quantity
from modelplane.cel.semver import SemverError, parse_semver

ATTRIBUTES, CAPACITY = "attributes", "capacity"
_ATTRIBUTE_KINDS = ("string", "version", "bool", "int")


class DefaultingMap(MapType):
    """A domain map: an unknown domain reads as an empty map; ``in`` still tests presence."""

    def __getitem__(self, key: Any) -> Any:
        if MapType.valid_key_type(key) and key not in self:
            return _EMPTY
        return super().__getitem__(key)


_EMPTY = MapType()


@dataclass(frozen=True)
class Device:
    """What a selector sees of a device: driver, typed attributes, capacity quantities."""

    driver: str
    # (domain, name, kind, raw value), sorted; kind is string | version | bool | int.
    attributes: tuple[tuple[str, str, str, Any], ...]
    # (domain, name, quantity text), sorted.
    capacity: tuple[tuple[str, str, str], ...]
    values: dict[tuple[str, str, str], Any] = field(init=False, compare=False, repr=False)
    published: dict[tuple[str, str, str], tuple[str, Any]] = field(init=False, compare=False, repr=False)
    defect: str | None = field(init=False, compare=False, repr=False)
    driver_value: StringType = field(init=False, compare=False, repr=False)

    @classmethod
    def from_class_device(cls, device: Mapping[str, Any]) -> Device:
        driver = str(device["driver"])
        attributes = []
        for key, attribute in (device.get("attributes") or {}).items():
            kinds = [kind for kind in _ATTRIBUTE_KINDS if kind in attribute]
            if len(kinds) != 1:
                raise ValueError(f"attribute {key!r} must set exactly one of {', '.join(_ATTRIBUTE_KINDS)}")
            attributes.append((*_qualify(key, driver), kinds[0], attribute[kinds[0]]))
        capacity = [(*_qualify(key, driver), str(entry["value"])) for key, entry in
                    (device.get("capacity") or {}).items()]
        return cls(driver, tuple(sorted(attributes)), tuple(sorted(capacity)))

    def __post_init__(self) -> None:
        published = {(ATTRIBUTES, d, n): (kind, raw) for d, n, kind, raw in self.attributes}
        published.update({(CAPACITY, d, n): ("quantity", text) for d, n, text in self.capacity})
        if len(published) != len(self.attributes) + len(self.capacity):
            raise ValueError(f"a device of driver {self.driver!r} defines an attribute or capacity twice")
        values: dict[tuple[str, str, str], Any] = {}
        defect = None
        for (section, domain, name), (kind, raw) in published.items():
            try:
                values[(section, domain, name)] = _value(kind, raw)
            except SemverError as error:
                defect = f"attribute {domain}/{name}: parse semantic version: {error}"
            except QuantityError as error:
                defect = f"capacity {domain}/{name}: {error}"
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "published", published)
        object.__setattr__(self, "defect", defect)
        object.__setattr__(self, "driver_value", StringType(self.driver))

    def has_domain(self, section: str, domain: str) -> bool:
        return domain in self._domains[section]

    @functools.cached_property
    def _domains(self) -> dict[str, frozenset[str]]:
        return {ATTRIBUTES: frozenset(a[0] for a in self.attributes),
                CAPACITY: frozenset(c[0] for c in self.capacity)}

    @functools.cached_property
    def activation(self) -> MapType:
        """The ``device`` variable for cel-python: maps of celpy values, domains defaulting."""
        sections: dict[str, dict[StringType, MapType]] = {ATTRIBUTES: {}, CAPACITY: {}}
        for (section, domain, name), value in self.values.items():
            sections[section].setdefault(StringType(domain), MapType())[StringType(name)] = value
        return MapType({
            StringType("driver"): self.driver_value,
            StringType(ATTRIBUTES): DefaultingMap(sections[ATTRIBUTES]),
            StringType(CAPACITY): DefaultingMap(sections[CAPACITY]),
        })


def _qualify(key: str, driver: str) -> tuple[str, str]:
    domain, slash, name = key.partition("/")
    return (domain, name) if slash else (driver, key)


def _value(kind: str, raw: Any) -> Any:
    if kind == "quantity":
        return parse_quantity(raw)
    if kind == "string":
        return StringType(raw)
    if kind == "bool":
        return BoolType(bool(raw))
    if kind == "int":
        return IntType(raw)
    return parse_semver(str(raw))
