"""Sharing a pool's nodes: how many nodes a set of pods needs so that every pod lands, whatever node
the cluster's own scheduler picks for each, in any order.

Model. A pool is C identical nodes; each kind j of device its class publishes for DRA claims has D_j
devices per node. A pod is *whole-node* (a gang pod, a pod that claims every device of a kind, a pod
whose request could take more than one kind, any pod of an `Exclusive` pool) or *shared*: it claims
k_j < D_j devices of each kind j it uses. The cluster's scheduler is any greedy one: it takes the
pods one at a time, in any order, and puts each on any node with room for it (Kubernetes' default
scoring spreads pods, so tight packing is never assumed). We need the scheduler never to find no room.

Rule (d whole-node pods, P shared pods; the pool admits them iff `need(...) <= C`):
- A whole-node pod fails only if every node already holds another pod. At most d - 1 + P others
  exist, so it lands when d - 1 + P <= C - 1: need >= d + P (when d > 0).
- A shared pod x (k_j of kind j) fails only if every node is *blocked* for it: holds a whole-node
  pod (at most d nodes), or has more than D_j - k_j of some kind j x uses taken by shared pods,
  i.e. at least T_j = D_j - k_j + 1. Among the other shared pods, one of at least T_j devices of
  kind j ("big") blocks at most one node; the others ("small", n_j pods of s_j devices together,
  the largest m_j) must add up to T_j on a node, which takes at least ceil(T_j / m_j) of them, so
  they block at most b_j = min(floor(s_j / T_j), floor(n_j / ceil(T_j / m_j))) nodes. Hence at most
  d + sum_j (big_j + b_j) nodes are blocked, and x lands when that is <= C - 1:
  need >= d + 1 + sum_j (big_j + b_j).
`need` is the largest of these bounds over the pods present, so it never shrinks as pods are added
(every bound only grows), which is what lets the scheduler stop trying a pool that is full.

For one kind and no whole-node pods this is at least as lenient as floor((S - k) / (D - k + 1)) <=
C - 1 for each size k present (S the devices of all shared pods), which the simpler sufficient rule
S - k <= C x (D - k) implies: the rule here admits everything that one does, and more (four pods of
4 of 8 GPUs on two nodes: the simpler rule refuses, this one admits). It is sufficient, not
necessary: it can ask for a node more than the worst scheduler would strand, never one less. `tests/scheduling/test_packing.py`
checks it against an adversarial greedy scheduler on every pool state the ledger accepts.

Surge room (`zeroDowntimeRollouts` pools, `surge_need`): the pool is admitted for its pods plus one
more pod of any size present, so a Standalone engine's surge pod (maxSurge 1) always lands. When
several engines roll out at once, one surge pod at a time is sure of a node; the others wait until
an old pod is gone, which brings the pool back to the admitted pods, so rollouts finish one after
another and never deadlock (each surge copy is one pod; gangs do not surge, as Kubernetes cannot
schedule a group of pods all or nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Sizes = tuple[int, ...]
"""Devices one pod claims of each kind of its pool's class (0 for a kind it does not use)."""


@dataclass(frozen=True, slots=True)
class Use:
    """What some pods put on one pool: whole-node pods, and shared pods by the devices each claims."""

    whole: int = 0
    shared: tuple[tuple[Sizes, int], ...] = ()
    """(devices per pod, pods), sorted by devices."""

    def __add__(self, other: Use) -> Use:
        if not other.shared and not self.shared:
            return Use(self.whole + other.whole)
        merged = dict(self.shared)
        for sizes, pods in other.shared:
            merged[sizes] = merged.get(sizes, 0) + pods
        return Use(self.whole + other.whole, tuple(sorted(merged.items())))

    @property
    def pods(self) -> int:
        return self.whole + sum(pods for _, pods in self.shared)


NOTHING = Use()


def need(per_node: Sizes, whole: int, shared: Mapping[Sizes, int]) -> int:
    """The fewest nodes on which `whole` whole-node pods and the `shared` pods (pods by devices per
    pod) always all land (the rule in the module docstring)."""
    sharing = sum(shared.values())
    return need_of_parts(whole, sharing, shared_need(per_node, shared) if sharing else 0)


def need_of_parts(whole: int, sharing: int, shared_part: int) -> int:
    """`need` from its parts: `whole` whole-node pods, `sharing` shared pods and their part
    `shared_part` (`shared_need`), so a pool that keeps the part between charges (`ledger.Load`)
    need not compute it again."""
    if not sharing:
        return whole
    return max(whole + sharing, whole + shared_part) if whole else shared_part


def surge_need(per_node: Sizes, whole: int, shared: Mapping[Sizes, int]) -> int:
    """`need` with room for one more pod of any size present: the nodes on which the pods and any one
    extra pod of a size they have (a rollout's surge pod) all land, whatever nodes are picked."""
    most = need(per_node, whole, shared)
    if whole:
        most = max(most, need(per_node, whole + 1, shared))
    for sizes, pods in shared.items():
        most = max(most, need(per_node, whole, {**shared, sizes: pods + 1}))
    return most


def shared_need(per_node: Sizes, shared: Mapping[Sizes, int]) -> int:
    """max over the shared pods x of 1 + sum_j (big_j + b_j): the shared pods' part of `need`,
    without the whole-node pods (0 when there are none)."""
    most = 0
    for sizes in shared:
        blocked = 0
        for kind, k in enumerate(sizes):
            if not k:
                continue
            threshold = per_node[kind] - k + 1
            big = small = count = largest = 0
            for other, pods in shared.items():
                size = other[kind]
                pods -= other == sizes  # x itself is not among the others
                if not size or not pods:
                    continue
                if size >= threshold:
                    big += pods
                else:
                    small, count, largest = small + size * pods, count + pods, max(largest, size)
            if count:
                blocked += min(small // threshold, count // -(-threshold // largest))
            blocked += big
        most = max(most, 1 + blocked)
    return most


def use_need(per_node: Sizes, uses: Iterable[Use]) -> int:
    """`need` of the pods of several uses of one pool together."""
    total = NOTHING
    for use in uses:
        total += use
    return need(per_node, total.whole, dict(total.shared))
