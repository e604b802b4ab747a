"""Recruitment links' rules, without Django: the platforms' parameter names, what a participant
id may look like, pseudonyms, completion URLs, and which captions a new participant gets.

A crowd platform sends its participants to the study's link with their ids in the URL
(Prolific: ``?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...``); annotation.services.recruitment
turns an id into a participant of the study.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from urllib.parse import urlsplit

from annotation.rules.assignment import Item

PROLIFIC = "prolific"
OTHER = "other"
# The platform's URL parameters: participant id, study id, session id (empty: none).
PLATFORM_PARAMS: dict[str, tuple[str, str, str]] = {
    PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    OTHER: ("pid", "", ""),
}
# How the platform writes its placeholders in the study URL it is given (shown to the admin).
PLACEHOLDERS = {PROLIFIC: "{{%%%s%%}}", OTHER: "{%s}"}

PARAM_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
# Prolific's ids are 24 hexadecimal digits, MTurk's worker ids 12-14 capitals and digits; any
# platform's fit here. Nothing else: an id is shown nowhere, but it is hashed and compared.
ID_MAX = 64
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{4,40}")
CAP_MAX = 100_000
QUOTA_MAX = 10_000
TIME_ALLOWED_MAX = 60 * 24 * 30  # minutes: a participant's time allowed is at most 30 days
LABEL_MAX = 200
URL_MAX = 500


def param_name_problem(name: object, *, field: str) -> str | None:
    if not isinstance(name, str) or not PARAM_NAME.fullmatch(name):
        return (f"The {field} parameter is a name of letters, digits and underscores (at most 40, a letter "
                f"first), such as PROLIFIC_PID; {str(name)[:40]!r} is not.")
    return None


def id_problem(value: object, *, name: str, required: bool) -> str | None:
    """Why `value` (a URL parameter called `name`) cannot be an id, or None."""
    if value in (None, ""):
        return (f"This link needs your participant id in its {name} parameter. Open it from the study's "
                "page on your platform, which fills it in.") if required else None
    if not isinstance(value, str):
        return f"The {name} parameter is given more than once."
    if "{" in value or "%" in value:
        return (f"The {name} parameter still holds the platform's placeholder ({value[:40]!r}), not an id: "
                "the platform fills it in when a participant opens the study.")
    if len(value) > ID_MAX or not ID_PATTERN.fullmatch(value):
        return (f"The {name} parameter is not an id this study takes: up to {ID_MAX} letters, digits, "
                "hyphens, underscores, dots or colons.")
    return None


def code_problem(code: object) -> str | None:
    if not isinstance(code, str) or not CODE_PATTERN.fullmatch(code):
        return "A completion code is 4 to 40 letters, digits, hyphens or underscores."
    return None


def completion_url_problem(url: object) -> str | None:
    if url in (None, ""):
        return None
    if not isinstance(url, str) or len(url) > URL_MAX:
        return f"The completion URL has at most {URL_MAX} characters."
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or any(c.isspace() for c in url):
        return "The completion URL is a web address starting with https:// (the platform gives it)."
    return None


def pseudonym_of(digest: str) -> str:
    """The participant's pseudonym: the first 40 bits of their keyed hash (hexadecimal)."""
    return "P-" + digest[:10].upper()


def recruitment_url(base: str, *, platform: str, participant: str, study: str, session: str) -> str:
    """The link as the admin gives it to the platform, the platform's placeholders in place."""
    placeholder = PLACEHOLDERS.get(platform, PLACEHOLDERS[OTHER])
    params = [name for name in (participant, study, session) if name]
    query = "&".join(f"{name}={placeholder % name}" for name in params)
    return f"{base}?{query}"


def pick_items(
    *,
    items: Sequence[Item],
    quota: int,
    one_per_clip: bool,
    seed: Hashable,
) -> list[Item]:
    """At most `quota` of `items` (captions nobody has yet) for a new participant.

    Clips in a random order (from `seed`); from each clip the caption of the model with the
    most captions still left (ties at random), so that the models' pools shrink evenly and
    each participant meets models about equally often. With `one_per_clip` (the design one
    model per clip) a participant gets at most one caption of a clip; otherwise, once every
    clip gave one, further rounds take more."""
    left: dict[Hashable, list[Item]] = defaultdict(list)
    per_model: dict[Hashable, int] = defaultdict(int)
    for item in items:
        left[item.clip].append(item)
        per_model[item.model] += 1
    order, rng = clip_order(left, seed)
    return pick_from(order=order, left=left, per_model=per_model, quota=quota, one_per_clip=one_per_clip, rng=rng)


def clip_order(clips: Iterable[Hashable], seed: Hashable) -> tuple[list[Hashable], random.Random]:
    """The clips with free captions in the order a participant meets them (random, from
    `seed`), and the generator, which goes on to break pick_from's ties."""
    rng = random.Random(str(seed))
    order = sorted(clips, key=str)
    rng.shuffle(order)
    return order, rng


def clips_walked(order: Sequence[Hashable], *, quota: int, one_per_clip: bool) -> Sequence[Hashable]:
    """The clips whose captions pick_from may take: each clip of `order` gives one caption in
    the first round, so the first `quota` of them; all, when later rounds may come."""
    return order if not one_per_clip and quota > len(order) else order[:quota]


def pick_from(
    *,
    order: Sequence[Hashable],
    left: Mapping[Hashable, list[Item]],
    per_model: Mapping[Hashable, int],
    quota: int,
    one_per_clip: bool,
    rng: random.Random,
) -> list[Item]:
    """pick_items' walk: `order` from clip_order, `left` the free captions of (at least) the
    clips_walked, by clip, in the order of their models' ids, and `per_model` every model's free
    captions. Takes what it picks from copies: `left` and `per_model` stay as they were."""
    left = {clip: list(left.get(clip, ())) for clip in clips_walked(order, quota=quota, one_per_clip=one_per_clip)}
    per_model = dict(per_model)
    picked: list[Item] = []
    while len(picked) < quota and any(left.values()):
        for clip in order:
            if len(picked) >= quota:
                break
            choices = left.get(clip)
            if not choices:
                continue
            most = max(per_model[item.model] for item in choices)
            best = [item for item in choices if per_model[item.model] == most]
            item = best[rng.randrange(len(best))]
            choices.remove(item)
            per_model[item.model] -= 1
            picked.append(item)
        if one_per_clip:
            break
    return picked


def progress(states: Mapping[str, int], *, waiting: Sequence[str]) -> tuple[int, int]:
    """(items done, items in all) from a participant's counts by state."""
    total = sum(states.values())
    return total - sum(states.get(state, 0) for state in waiting), total


# Where a participant stands, as the admins' lists say it.
WORKING, COMPLETED, TIMED_OUT, WITHDRAWN = "working", "completed", "timed out", "withdrawn"
PARTICIPANT_STATES = (WORKING, COMPLETED, TIMED_OUT, WITHDRAWN)


def participant_state(*, completed_at: datetime | None, time_out_at: datetime | None,
                      withdrawn_at: datetime | None, now: datetime) -> tuple[str, datetime | None]:
    """(state, since when) of a participant: withdrawn first (whatever they did, their work no
    longer counts), then completed (every item given done, whatever their time), then timed out
    (their time allowed passed before they completed: since time_out_at), else working (since:
    None, they are still at it)."""
    if withdrawn_at is not None:
        return WITHDRAWN, withdrawn_at
    if completed_at is not None:
        return COMPLETED, completed_at
    if time_out_at is not None and time_out_at <= now:
        return TIMED_OUT, time_out_at
    return WORKING, None
