"""Assignment designs: who gets which caption, and in which order they see them.

Pure code without Django. A study is a measurement: an annotator who has just corrected
Model A's caption of a clip knows what to look for in Model B's caption of the same
clip, which inflates agreement between models and biases every per-model table. A
design says how captions of one clip may reach one annotator:

- ``one_model_per_clip`` (the default): an annotator sees at most one caption of a clip.
  Models rotate over annotators clip by clip (a Latin square), so every annotator sees
  every model about equally often. Needs at least as many annotators as captions per
  clip (double annotations included); captions that cannot be placed are reported.
- ``spread``: an annotator may see several models of a clip, but two captions of one
  clip are never within ``gap`` items of each other in their queue (at least ``gap``
  other items lie between them).
- ``clip_blocks``: the old order, clip by clip, model after model, round-robin over the
  annotators as given. For pilots only: it anchors.

Within the design the order is random, drawn from the seed, so the same inputs always
give the same plan. Each placed caption carries its *position* in the annotator's queue
(1 = first) and its *exposure*: 1 when it is the first caption of its clip that
annotator meets, 2 for the second, and so on.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, defaultdict, deque
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

ONE_MODEL_PER_CLIP = "one_model_per_clip"
SPREAD = "spread"
CLIP_BLOCKS = "clip_blocks"
DESIGNS = (ONE_MODEL_PER_CLIP, SPREAD, CLIP_BLOCKS)
DEFAULT_GAP = 5
EXCLUSIVE_FULL = (
    "every chosen annotator already has a caption of this clip: one model per clip needs at "
    "least as many annotators as captions of a clip (double annotations included)"
)


@dataclass(frozen=True)
class Item:
    """A caption to assign: its id, its clip and its model (any hashable ids)."""

    caption: Hashable
    clip: Hashable
    model: Hashable


@dataclass(frozen=True)
class Placed:
    caption: Hashable
    annotator: Hashable
    position: int  # 1-based place in the annotator's queue
    exposure: int  # 1 = the first caption of its clip this annotator sees


@dataclass
class Plan:
    placed: list[Placed] = field(default_factory=list)
    # Captions (or their second annotation) that the design could not place, with why.
    unplaced: list[tuple[Hashable, str]] = field(default_factory=list)


class DesignError(ValueError):
    """The design cannot be met with these captions and annotators; the message says why."""


def plan_assignment(
    *,
    items: Sequence[Item],
    annotators: Sequence[Hashable],
    design: str = ONE_MODEL_PER_CLIP,
    seed: int = 0,
    overlap_share: float = 0.0,
    gap: int = DEFAULT_GAP,
    held: Mapping[Hashable, Sequence[Item]] | None = None,
    taken: Mapping[Hashable, int] | None = None,
) -> Plan:
    """Place `items` with `annotators` under `design`; the same arguments give the same plan.

    `held` is what each annotator already has, in queue order: nobody gets a caption
    twice, the design's rules count those items too, and new positions follow them.
    `taken` counts the annotations each caption already has, by anyone (default: those in
    `held`); a caption is placed only as often as it still needs to be. A share
    `overlap_share` of the items (drawn with the seed) goes to two annotators.
    """
    if design not in DESIGNS:
        raise DesignError(f"Unknown assignment design {design!r}: use one of {', '.join(DESIGNS)}.")
    if not annotators:
        raise DesignError("Choose at least one annotator.")
    if not 0 <= overlap_share <= 1:
        raise DesignError(f"The overlap share must be between 0 and 1, not {overlap_share}.")
    if gap < 0:
        raise DesignError(f"The spacing of the spread design must be 0 or more, not {gap}.")
    held = (
        {person: list(held.get(person, ())) for person in annotators}
        if held
        else {person: [] for person in annotators}
    )
    rng = random.Random(seed)
    items = list(items)
    doubled = set(rng.sample(range(len(items)), round(overlap_share * len(items))))
    wanted = {item.caption: 2 if n in doubled else 1 for n, item in enumerate(items)}
    if taken is None:
        taken = Counter(item.caption for queue in held.values() for item in queue)
    # What each caption still needs; the loops below place it at most that often.
    wanted = {caption: max(0, n - taken.get(caption, 0)) for caption, n in wanted.items()}

    if design == CLIP_BLOCKS:
        given = _round_robin(items, annotators, wanted, held)
    else:
        given = _latin_square(
            items, annotators, wanted, held, rng, exclusive=design == ONE_MODEL_PER_CLIP
        )
    plan = Plan(unplaced=given.unplaced)
    for person in annotators:
        new = given.by_annotator.get(person, [])
        if design == SPREAD:
            order = _spaced(new, held[person], gap, rng, person)
        elif design == ONE_MODEL_PER_CLIP:
            order = list(new)
            rng.shuffle(order)
        else:
            order = list(new)
        seen = Counter(item.clip for item in held[person])
        start = len(held[person])
        for offset, item in enumerate(order, start=1):
            seen[item.clip] += 1
            plan.placed.append(Placed(item.caption, person, start + offset, seen[item.clip]))
    return plan


@dataclass
class _Given:
    by_annotator: dict[Hashable, list[Item]]
    unplaced: list[tuple[Hashable, str]]


def _round_robin(
    items: Sequence[Item],
    annotators: Sequence[Hashable],
    wanted: Mapping[Hashable, int],
    held: Mapping[Hashable, Sequence[Item]],
) -> _Given:
    """Today's order: captions in the order given, round-robin over the annotators."""
    holders = _holders(held)
    by_annotator: dict[Hashable, list[Item]] = defaultdict(list)
    unplaced: list[tuple[Hashable, str]] = []
    turn = 0
    for item in items:
        mine = holders[item.caption]
        for _ in range(wanted[item.caption]):
            for step in range(len(annotators)):
                person = annotators[(turn + step) % len(annotators)]
                if person not in mine:
                    by_annotator[person].append(item)
                    mine.add(person)
                    turn = (turn + step + 1) % len(annotators)
                    break
            else:
                unplaced.append((item.caption, "every chosen annotator already has this caption"))
    return _Given(by_annotator, unplaced)


def _latin_square(
    items: Sequence[Item],
    annotators: Sequence[Hashable],
    wanted: Mapping[Hashable, int],
    held: Mapping[Hashable, Sequence[Item]],
    rng: random.Random,
    *,
    exclusive: bool,
) -> _Given:
    """Clips in a random order; on clip j, the model of rank r starts looking at annotator
    (j + r) mod K, so models rotate over annotators. With `exclusive`, nobody gets two
    captions of one clip."""
    holders = _holders(held)
    clips_held: dict[Hashable, set[Hashable]] = defaultdict(set)
    for person, queue in held.items():
        for item in queue:
            clips_held[item.clip].add(person)
    # Ranks and clip order by first appearance, so that the plan depends on the order of
    # `items` (the caller's, e.g. by name) and not on the values of database ids.
    models = list(dict.fromkeys(item.model for item in items))
    rank = {model: r for r, model in enumerate(models)}
    by_clip: dict[Hashable, list[Item]] = defaultdict(list)
    for item in items:
        by_clip[item.clip].append(item)
    clips = list(by_clip)
    rng.shuffle(clips)
    people = list(annotators)
    rng.shuffle(people)
    k = len(people)
    by_annotator: dict[Hashable, list[Item]] = defaultdict(list)
    unplaced = []
    for j, clip in enumerate(clips):
        for item in sorted(by_clip[clip], key=lambda i: rank[i.model]):
            mine = holders[item.caption]
            start = (j + rank[item.model]) % k
            for _ in range(wanted[item.caption]):
                for step in range(k):
                    person = people[(start + step) % k]
                    if person in mine or (exclusive and person in clips_held[clip]):
                        continue
                    by_annotator[person].append(item)
                    mine.add(person)
                    clips_held[clip].add(person)
                    start = (start + step + 1) % k
                    break
                else:
                    unplaced.append(
                        (
                            item.caption,
                            EXCLUSIVE_FULL
                            if exclusive
                            else "every chosen annotator already has this caption",
                        )
                    )
    return _Given(by_annotator, unplaced)


def _holders(held: Mapping[Hashable, Sequence[Item]]) -> defaultdict[Hashable, set[Hashable]]:
    holders: defaultdict[Hashable, set[Hashable]] = defaultdict(set)
    for person, queue in held.items():
        for item in queue:
            holders[item.caption].add(person)
    return holders


def _spaced(
    new: Sequence[Item], before: Sequence[Item], gap: int, rng: random.Random, person: Hashable
) -> list[Item]:
    """A random order of `new`, after `before`, with at least `gap` items between two
    captions of one clip. Takes, at each step, a caption of the clip with the most captions
    left among those allowed (random among ties): that never paints itself into a corner
    when an order exists at all. A heap keeps the allowed clips and a queue those waiting
    out their spacing, so each step costs log(clips), not a pass over every clip."""
    last: dict[Hashable, int] = {}
    for position, item in enumerate(before):
        last[item.clip] = position
    left: dict[Hashable, list[Item]] = defaultdict(list)
    for item in new:
        left[item.clip].append(item)
    for queue in left.values():
        rng.shuffle(queue)
    # Heap entries: (-captions left, random tie-break, arrival, clip); the tie-break is drawn
    # once per clip, in the order clips first appear, so the same seed gives the same order.
    tie = {clip: rng.random() for clip in left}
    ready: list[tuple[int, float, int, Hashable]] = []
    waiting: deque[tuple[int, Hashable]] = deque()  # (position from which allowed, clip)
    pending = sorted(
        ((last[clip] + gap + 1, n, clip) for n, clip in enumerate(left) if clip in last),
        key=lambda entry: (entry[0], entry[1]),
    )
    waiting.extend((allowed_from, clip) for allowed_from, _, clip in pending)
    for n, clip in enumerate(left):
        if clip not in last:
            heapq.heappush(ready, (-len(left[clip]), tie[clip], n, clip))
    arrival = len(left)
    order: list[Item] = []
    position = len(before)
    while ready or waiting:
        while waiting and waiting[0][0] <= position:
            _, clip = waiting.popleft()
            heapq.heappush(ready, (-len(left[clip]), tie[clip], arrival, clip))
            arrival += 1
        if not ready:
            clips = len(set(i.clip for i in new) | set(i.clip for i in before))
            raise DesignError(
                f"The spread design cannot keep {gap} items between two captions of one clip "
                f"for annotator {person} ({len(new) + len(before)} captions of {clips} clips). "
                "Choose a smaller spacing, more annotators, or one model per clip."
            )
        _, _, _, clip = heapq.heappop(ready)
        order.append(left[clip].pop())
        if left[clip]:
            waiting.append((position + gap + 1, clip))
        else:
            del left[clip]
        position += 1
    return order


def spacing_ok(queue: Sequence[Hashable], gap: int) -> bool:
    """Whether no two equal clips in `queue` (clip ids in queue order) are within `gap` items."""
    last: dict[Hashable, int] = {}
    for position, clip in enumerate(queue):
        if clip in last and position - last[clip] <= gap:
            return False
        last[clip] = position
    return True
