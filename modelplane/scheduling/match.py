"""Member x pool matching: can one node of a pool's class give a member's pods every device they ask for?

Rule 2, Pools: each device request of a member needs one class device that satisfies every selector, with
enough remaining `count` on one node; the requests of one member share the node's devices. A member
without nodeSelector matches any pool and claims nothing. Requests that resolve to `Synthetic`
devices count for matching but are never claimed.

Requests are assigned to devices by a depth-first search over the candidates, so a member is
rejected only when no assignment exists (or, for a pathological member of many interchangeable
requests, when the search exceeds its step budget: it can wrongly reject, never overcommit). Results are memoized per (nodeSelector, class) for the
run: a fleet repeats the same requests and classes many times. Underneath, which devices satisfy a
request is a bit mask over the snapshot's distinct devices (each distinct expression evaluated once
on each, a selector list the AND of its expressions), and what only depends on that (the devices of
a class that satisfy a request, the classes with enough of them) is memoized per mask: selectors
that differ only in literals no device tells apart share it (`signature`, `engines.shape_key`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from modelplane.api import Claim, DeviceRequest
from modelplane.api.workload import NodeSelector
from modelplane.cel import Evaluation, SelectorEvaluator
from modelplane.scheduling.placement import ResolvedRequest
from modelplane.scheduling.reasons import Code, Reason
from modelplane.scheduling.snapshot import DeviceView, PoolView, Snapshot


@dataclass(frozen=True)
class MemberMatch:
    """Which class device each request of a member resolved to."""

    resolved: tuple[tuple[DeviceRequest, DeviceView], ...] = ()
    pinned: bool = True
    """Whether each request can take only the device it resolved to: DRA allocates any device that
    satisfies the selectors, so a request two kinds satisfy could take either (and its pods are
    given whole nodes: which kind they use is not known)."""

    @cached_property
    def claims_dra(self) -> bool:
        return any(device.claim is Claim.DRA for _, device in self.resolved)

    def sizes(self, kinds: tuple[DeviceView, ...]) -> tuple[int, ...]:
        """Devices one pod claims of each kind (the class's DRA devices, in order)."""
        return tuple(sum(request.count for request, device in self.resolved if device.name == kind.name)
                     for kind in kinds)

    @cached_property
    def claimed(self) -> tuple[ResolvedRequest, ...]:
        """The DRA requests the member's ResourceClaimTemplate carries (the user's CEL verbatim);
        built once per match, which every placement of the member on a pool of the class shares."""
        return tuple(
            ResolvedRequest.trusted(name=request.name, device_class_name=device.device_class_name or "",
                                    count=request.count, selectors=tuple(s.cel for s in request.selectors))
            for request, device in self.resolved if device.claim is Claim.DRA)


NO_REQUESTS = MemberMatch()


class Matcher:
    """Matches of one run's snapshot (every device it is asked about is one of the snapshot's)."""

    def __init__(self, evaluator: SelectorEvaluator, snapshot: Snapshot):
        self.evaluator = evaluator
        self.snapshot = snapshot
        self._samples = tuple(sample.device for sample, _ in snapshot.publishers)
        self._bits = {id(device): 1 << index for index, device in enumerate(self._samples)}
        """Each distinct CEL device's bit in a mask of `_samples`."""
        self._memo: dict[tuple[int, str], MemberMatch | Miss] = {}
        # Equal selectors share one memo slot; each selector object is hashed once (pydantic's
        # structural hash is too slow for the hot path). The list keeps the ids valid.
        self._canonical: dict[NodeSelector, int] = {}
        self._by_id: dict[int, int] = {}
        self._alive: list[object] = []
        self._satisfying: dict[tuple[int, str], list[DeviceView]] = {}
        self._enough_memo: dict[tuple[int, int], tuple[frozenset[str], frozenset[str]]] = {}
        self._masks: dict[tuple[str, ...], int] = {}
        self._expression_masks: dict[str, int] = {}
        self._request_cels: dict[int, tuple[str, ...]] = {}

    def match_class(self, selector: NodeSelector | None, pool: PoolView) -> MemberMatch | Miss:
        """The match against the pool's class; a Miss becomes a Reason only when someone asks why."""
        return self.match_devices(selector, pool.class_name, pool.devices)

    def match_devices(self, selector: NodeSelector | None, class_name: str,
                      devices: tuple[DeviceView, ...]) -> MemberMatch | Miss:
        if selector is None:
            return NO_REQUESTS
        slot = self._by_id.get(id(selector))
        if slot is None:
            slot = self._by_id[id(selector)] = self._canonical.setdefault(selector, len(self._canonical))
            self._alive.append(selector)
        key = (slot, class_name)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._match(selector, class_name, devices)
        return found

    def _match(self, selector: NodeSelector, class_name: str, devices: tuple[DeviceView, ...]) -> MemberMatch | Miss:
        candidates: list[list[DeviceView]] = []
        pinned = True
        for request in selector.devices:
            satisfying = self._satisfying_devices(request, class_name, devices)
            enough = [d for d in satisfying if d.count >= request.count]
            if not enough:
                return self._request_miss(request, satisfying, class_name, devices)
            candidates.append(enough)
            pinned = pinned and sum(d.claim is Claim.DRA for d in satisfying) <= 1
        assignment = _assign(selector.devices, candidates)
        if assignment is None:
            names = ", ".join(r.name for r in selector.devices)
            return Miss(Code.DEVICE_COUNT, "had too few devices per node for the member's requests together",
                        lambda: (f"requests {names} each match, but one node of class {class_name} has too few "
                                 "devices for all of them at once (requests of one member share a node's devices)",
                                 "lower the counts or use a class with more devices per node"))
        return MemberMatch(tuple(zip(selector.devices, assignment)), pinned)

    def signature(self, selector: NodeSelector | None) -> tuple[tuple[int, int], ...] | None:
        """What the selector's matches on every class of the snapshot depend on: per request, the
        distinct devices that satisfy its selectors (`_mask`) and its count. Selectors of equal
        signatures match the same classes with the same sizes (`_match` reads nothing else but the
        requests' names, which only a Miss's wording and a placement's claims carry)."""
        if selector is None:
            return None
        return tuple((self._mask(self._cels(request)), request.count) for request in selector.devices)

    def usable_classes(self, selector: NodeSelector | None) -> frozenset[str]:
        """A superset of the classes on which a member with this selector can match and claim a DRA
        device: every request has a satisfying device with enough count there (ignoring how the
        requests share a node), and some request can resolve to a DRA device. A cheap filter: it
        never excludes a class where the member matches."""
        if selector is None:
            return frozenset()
        matching: frozenset[str] | None = None
        claiming: frozenset[str] = frozenset()
        for request in selector.devices:
            matching_here, claiming_here = self._enough(request)
            matching = matching_here if matching is None else matching & matching_here
            claiming = claiming | claiming_here
        return (matching or frozenset()) & claiming

    def _enough(self, request: DeviceRequest) -> tuple[frozenset[str], frozenset[str]]:
        """The classes with a device satisfying the request's selectors in at least its count per
        node, and those where such a device is a DRA one. Memoized per (devices satisfying, count):
        the varied 1,000 x 10,000 benchmark fleet's 10,364 distinct selector lists are satisfied by
        far fewer distinct sets of devices."""
        key = (self._mask(self._cels(request)), request.count)
        found = self._enough_memo.get(key)
        if found is None:
            most: dict[str, tuple[int, int]] = {}
            for index, (_, publishers) in enumerate(self.snapshot.publishers):
                if key[0] >> index & 1:
                    for name, device in publishers:
                        any_count, dra = most.get(name, (0, 0))
                        most[name] = (max(any_count, device.count),
                                      max(dra, device.count if device.claim is Claim.DRA else 0))
            found = self._enough_memo[key] = (
                frozenset(name for name, (any_count, _) in most.items() if any_count >= request.count),
                frozenset(name for name, (_, dra) in most.items() if dra >= request.count))
        return found

    def _satisfying_devices(self, request: DeviceRequest, class_name: str,
                            devices: tuple[DeviceView, ...]) -> list[DeviceView]:
        """The class's devices that match every selector of the request, whatever its count
        (memoized per set of devices satisfying and class)."""
        mask = self._mask(self._cels(request))
        key = (mask, class_name)
        found = self._satisfying.get(key)
        if found is None:
            bits = self._bits
            found = self._satisfying[key] = [d for d in devices if mask & bits[id(d.device)]]
        return found

    def _mask(self, cels: tuple[str, ...]) -> int:
        """The distinct devices (`_samples`) that match every selector of a list, as a bit mask.

        Each distinct expression is evaluated once on every distinct device, and a list's mask is
        its expressions' masks ANDed (a later expression is not evaluated once none is left). Asked
        per (selector list, device) instead, with `all()` over the list, the varied 1,000 x 10,000
        benchmark fleet's 10,364 selector lists made 228k memo entries and about 400k evaluator
        calls (51k evaluations): engine shapes took 1.9 of a cold place's 7.1 CPU s."""
        found = self._masks.get(cels)
        if found is None:
            found = (1 << len(self._samples)) - 1
            for cel in cels:
                if not found:
                    break
                mask = self._expression_masks.get(cel)
                if mask is None:
                    mask = self._expression_masks[cel] = self.evaluator.matching(cel, self._samples)
                found &= mask
            self._masks[cels] = found
        return found

    def _cels(self, request: DeviceRequest) -> tuple[str, ...]:
        """The request's selector expressions (by object identity: requests live as long as the run)."""
        found = self._request_cels.get(id(request))
        if found is None:
            found = self._request_cels[id(request)] = tuple(s.cel for s in request.selectors)
            self._alive.append(request)
        return found

    def _evaluate(self, cel: str, device: DeviceView) -> Evaluation:
        # The evaluator memoizes by (expression, device object) itself: no second memo here.
        return self.evaluator.evaluate(cel, device.device)

    def _request_miss(self, request: DeviceRequest, satisfying: list[DeviceView], class_name: str,
                      devices: tuple[DeviceView, ...]) -> Miss:
        if satisfying:
            best = max(satisfying, key=lambda d: d.count)
            return Miss(Code.DEVICE_COUNT, f"had too few devices per node for request {request.name}",
                        lambda: (f"request {request.name} wants {request.count} per node; device {best.name} of "
                                 f"class {class_name} has {best.count}",
                                 f"lower count to {best.count} or use a class with {request.count} devices per node"))

        def describe() -> tuple[str, str]:
            closest = self._closest(request, devices)
            if closest is None:
                detail = f"class {class_name} has no devices"
            else:
                device, selector, why = closest
                detail = (f"request {request.name}: no device of class {class_name} satisfies every selector; "
                          f"the closest, device {device.name}, fails `{selector}`: {why}")
            return detail, "relax the selector or add a pool whose class satisfies it"

        return Miss(Code.NO_MATCHING_DEVICE, f"had no device matching request {request.name}", describe)

    def _closest(self, request: DeviceRequest, devices: tuple[DeviceView, ...]) -> tuple[DeviceView, str, str] | None:
        """The device that passes the most selectors (first declared on ties), its first failing
        selector and why it failed."""
        best: tuple[int, DeviceView, str, str] | None = None
        for device in devices:
            passed, failure = 0, None
            for selector in request.selectors:
                evaluation = self._evaluate(selector.cel, device)
                if evaluation.matched:
                    passed += 1
                elif failure is None:
                    failure = (" ".join(selector.cel.split()), evaluation.reason or "did not match")
            if failure is not None and (best is None or passed > best[0]):
                best = (passed, device, *failure)
        return None if best is None else best[1:]


class Miss:
    """A memoized class-level miss; `at(pool)` makes the Reason for one pool. Its detail and hint
    (which selector failed on the closest device, and the value it read) cost CEL work, so they
    are worked out once, and only when a Reason is asked for."""

    __slots__ = ("code", "phrase", "_describe", "_described")

    def __init__(self, code: Code, phrase: str, describe: Callable[[], tuple[str, str]]):
        self.code = code
        self.phrase = phrase
        self._describe = describe
        self._described: tuple[str, str] | None = None

    def at(self, pool: PoolView) -> Reason:
        if self._described is None:
            self._described = self._describe()
        detail, hint = self._described
        return Reason(self.code, self.phrase, pool.cluster, pool.name, detail, hint)


ASSIGN_BUDGET = 10_000


def _assign(requests: tuple[DeviceRequest, ...], candidates: list[list[DeviceView]]) -> list[DeviceView] | None:
    """A device per request such that no device is asked for more than its count, or None."""
    if len(requests) == 1:  # the common case: candidates were filtered to devices with enough count
        return [candidates[0][0]]
    left: dict[str, int] = {}
    chosen: list[DeviceView] = []
    budget = [ASSIGN_BUDGET]

    def search(index: int) -> bool:
        if index == len(requests):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            return False
        for device in candidates[index]:
            remaining = left.get(device.name, device.count)
            if remaining >= requests[index].count:
                left[device.name] = remaining - requests[index].count
                chosen.append(device)
                if search(index + 1):
                    return True
                chosen.pop()
                left[device.name] = remaining
        return False

    return chosen if search(0) else None
