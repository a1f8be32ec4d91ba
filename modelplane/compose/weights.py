"""Weights of a ModelService: the service's rule as exact fractions, then the integers Gateway API takes.

Invariants:
- The rule: each `spec.endpoints[]` group's weight is divided evenly across the endpoints its
  selector matches (in the service's namespace, placed or external); an endpoint two groups match
  gets both shares (`endpoint_shares`).
- Routing is a two-level tree: the fleet route's backendRefs (targets), each over its leaves (the
  backendRefs of a route on a workload cluster, or the external endpoint itself).
  `integer_weights` gives every leaf the smallest integers proportional to its share, in one scale
  for the whole service; a target's fleet weight is the sum of its leaves. So the end-to-end share of
  a leaf, fleet weight / fleet total x leaf weight / target total, is leaf weight / total of all
  leaves: exactly its share under the rule.
- Gateway API caps a weight at 1,000,000. Only when a target's sum would exceed that are the leaves
  scaled down (never to 0); then the shares are kept to within rounding, no longer exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from math import gcd, lcm

from modelplane.api import ModelService
from modelplane.compose.findings import Finding
from modelplane.invariants import InvariantError

MAX_WEIGHT = 1_000_000


def endpoint_shares(service: ModelService, labels: Sequence[Mapping[str, str]]) -> tuple[list[Fraction], list[Finding]]:
    """The share of each endpoint (given by its labels) under the service's rule (0 when not selected),
    and a warning for each group that selects nothing."""
    shares = [Fraction(0)] * len(labels)
    findings = []
    for index, group in enumerate(service.spec.endpoints):
        matched = [i for i, endpoint in enumerate(labels) if group.selector.matches(endpoint)]
        if not matched:
            findings.append(Finding(service, ("spec", "endpoints", index, "selector"),
                                    f"selects no ModelEndpoint in namespace {service.namespace!r} (no placed replica "
                                    f"or external endpoint has these labels); its weight {group.weight} is unused",
                                    "service-selects-nothing"))
        for i in matched:
            shares[i] += Fraction(group.weight, len(matched))
    return shares, findings


def integer_weights(targets: Sequence[Sequence[Fraction]]) -> list[list[int]]:
    """The leaves' shares of each target as the smallest proportional integers whose sum per target is
    at most MAX_WEIGHT (every leaf at least 1).

    Scaling down aims the largest sum at MAX_WEIGHT minus the number of leaves: each leaf rounds up
    by less than 1, so no sum can pass MAX_WEIGHT.
    """
    leaves = [share for target in targets for share in target]
    if not leaves or any(share <= 0 for share in leaves):
        raise InvariantError(f"every leaf of a route has a positive share, got {leaves}")
    scale = lcm(*(share.denominator for share in leaves))
    common = gcd(*(int(share * scale) for share in leaves))
    whole = [[int(share * scale) // common for share in target] for target in targets]
    top = max(sum(target) for target in whole)
    if top <= MAX_WEIGHT:
        return whole
    room = MAX_WEIGHT - len(leaves)
    return [[max(1, round(Fraction(weight * room, top))) for weight in target] for target in whole]
