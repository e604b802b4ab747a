"""The study bundle format: one JSON document holding a whole study, versioned and checked.

Pure code without Django: the canonical encoding (so that export, import and export again
give the same bytes), timestamps, and the checks a bundle must pass before anything is
stored. docs/bundle-format.md describes the format for people; annotation.services.bundles
reads and writes the database.

Bundles name things, never database ids: clips by name, models by name, users by username,
captions by (clip, model), annotations by (clip, model, annotator), windows by index,
taxonomies by content hash.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from annotation.interchange.formats import MAX_WINDOWS
from annotation.interchange.formats.common import unstorable_character
from annotation.rules import consent as consent_rules
from annotation.rules import guidelines as guideline_rules
from annotation.rules.study_settings import UNDO_SECONDS_MAX
from annotation.rules.taxonomy import MODE_FIELDS, taxonomy_hash

FORMAT = "redline-study-bundle"
FORMAT_VERSION = 6
DESIGNS = ("one_model_per_clip", "spread", "clip_blocks")  # annotation.rules.assignment.DESIGNS
STUDY_STATES = ("setup", "running", "closed", "archived")  # annotation.models.StudyState
CAPTION_LANGUAGES = ("en", "zh", "ja", "other")  # annotation.models.CaptionLanguage


def _upgrade_1_to_2(bundle: dict[str, Any]) -> dict[str, Any]:
    """Version 2 adds each clip's shot changes; a version-1 clip has them not yet detected."""
    for clip in bundle.get("clips") or []:
        if isinstance(clip, dict):
            clip.setdefault("shot_changes", None)
    return bundle


def _upgrade_2_to_3(bundle: dict[str, Any]) -> dict[str, Any]:
    """Version 3 adds the study's assignment design (with its spread spacing and seed) and, per
    annotation, its queue position, exposure and returned units. Studies before designs were
    assigned clip by clip, so a version-2 study reads as clip blocks, its annotations without a
    recorded position or exposure, and returns without named units."""
    study = bundle.get("study")
    if isinstance(study, dict):
        study.setdefault("assignment_design", "clip_blocks")
        study.setdefault("spread_gap", 5)
        study.setdefault("assignment_seed", 0)
    for annotation in bundle.get("annotations") or []:
        if isinstance(annotation, dict):
            annotation.setdefault("queue_position", None)
            annotation.setdefault("exposure", None)
            annotation.setdefault("returned_units", [])
    return bundle


def _upgrade_3_to_4(bundle: dict[str, Any]) -> dict[str, Any]:
    """Version 4 adds the study's lifecycle state, caption language, overlap share and undo time.
    Studies before the lifecycle were at work, in English, without double annotation, and undid
    decisions within the site's UNDO_SECONDS (null)."""
    study = bundle.get("study")
    if isinstance(study, dict):
        study.setdefault("state", "running")
        study.setdefault("caption_language", "en")
        study.setdefault("overlap_share", 0)
        study.setdefault("undo_seconds", None)
    return bundle


def _upgrade_4_to_5(bundle: dict[str, Any]) -> dict[str, Any]:
    """Version 5 adds the study's guideline versions and, on each pass and annotation, the
    guideline version its verdicts were given under. Studies before guidelines had none."""
    bundle.setdefault("guidelines", [])
    for annotation in bundle.get("annotations") or []:
        if isinstance(annotation, dict):
            annotation.setdefault("review_guideline_version", None)
            for correction in (annotation.get("passes") or {}).values():
                if isinstance(correction, dict):
                    correction.setdefault("guideline_version", None)
    return bundle


def _upgrade_5_to_6(bundle: dict[str, Any]) -> dict[str, Any]:
    """Version 6 adds the study's withdrawals and its consent: the versions of its consent text
    and who accepted which. A version-5 bundle did not carry them, so it reads as a study nobody
    withdrew from and that asked for no consent."""
    bundle.setdefault("withdrawals", [])
    bundle.setdefault("consent_versions", [])
    bundle.setdefault("consent_acceptances", [])
    return bundle


# How to bring a bundle of version N up to N + 1; a reader accepts any version up to its own.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _upgrade_1_to_2,
    2: _upgrade_2_to_3,
    3: _upgrade_3_to_4,
    4: _upgrade_4_to_5,
    5: _upgrade_5_to_6,
}

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
STATES = ("assigned", "in_progress", "submitted", "in_review", "approved", "returned")
ROLES = ("admin", "annotator", "reviewer", "researcher", "expert")
# What an annotation is for (annotation.models.Annotation.Purpose); absent means work. A practice
# attempt carries its number ("attempt", absent: 1). The study's gold items are listed in the
# study record's "gold_items" (absent: none): [{clip, model, in_practice_set, source}], each the
# caption of one annotation of purpose gold (its maker's).
PURPOSES = ("work", "gold", "practice", "gold_check")
VERDICTS = ("", "accept", "reject")
PASS_KINDS = ("annotator", "qc")
SECTIONS: dict[str, type] = {
    "study": dict,
    "taxonomies": list,
    "users": list,
    "members": list,
    "clips": list,
    "models": list,
    "captions": list,
    "references": list,
    "annotations": list,
    "audit": list,
    "guidelines": list,
    "withdrawals": list,
    "consent_versions": list,
    "consent_acceptances": list,
}


SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,60}$")
# Whole numbers are stored in 32-bit columns, sizes in bytes in 64-bit ones.
MAX_WHOLE = 2**31 - 1
MAX_BYTES = 2**63 - 1
MAX_NAME_CHARS = 200
MAX_ALIAS_CHARS = 40
CLIP_FILE_KINDS = ("original", "proxy", "poster")
# A clip is seconds to minutes of video; a day is far above any real one, and keeps the times
# computed from it (window ends, playback positions) ordinary numbers.
MAX_CLIP_SECONDS = 86_400
MAX_FPS = 1_000
# Django's rule for usernames (UnicodeUsernameValidator, 150 characters): a name shown on every
# page of the study may not carry markup or spaces.
USERNAME = re.compile(r"^[\w.@+-]{1,150}\Z")
MODE_LEVELS = ("unit", "caption")  # annotation.models.FailureMode.Level


def username_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a username here, or None."""
    if not isinstance(name, str) or not USERNAME.match(name):
        return (f"the username {str(name)[:40]!r} may hold only letters, digits and @ . + - _ "
                "(1 to 150 characters)")
    return None


def slug_problem(slug: Any) -> str | None:
    """Why ``slug`` cannot name a study (it appears in every address of the study), or None."""
    if not isinstance(slug, str) or not SLUG.match(slug):
        return (
            f"the slug {slug!r} is not usable: 1 to 60 letters, digits, hyphens or underscores"
        )
    return None


def clip_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a clip (it is shown and used in addresses), or None."""
    if not name.strip():
        return "the clip name is empty"
    if name != name.strip():
        return f"the clip name {name!r} starts or ends with spaces"
    if "/" in name or "\\" in name or name in {".", ".."}:
        return f"the clip name {name!r} contains a slash or is . or .."
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 for c in name):
        return f"the clip name {name[:40]!r} is longer than {MAX_NAME_CHARS} characters or has " \
            "control characters"
    return None


def media_path_problem(path: str, kind: str, slug: str) -> str | None:
    """Why ``path`` is not a file of the study's own media folder for ``kind`` files
    (``clips/<kind>/<slug>/<file name>``), or None. A path anywhere else could name another
    study's video, which this study's members would then be able to stream."""
    prefix = f"clips/{kind}/{slug}/"
    name = path[len(prefix):] if path.startswith(prefix) else ""
    if not name or "/" in name or "\\" in name or name in {".", ".."}:
        return f"{path!r} is not inside the study's own folder {prefix}"
    return None


class BundleError(ValueError):
    """The bundle cannot be read; `errors` says everything that is wrong with it."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        shown = "\n".join(f"- {error}" for error in self.errors[:50])
        more = f"\n(and {len(self.errors) - 50} more)" if len(self.errors) > 50 else ""
        super().__init__(
            f"This is not a usable study bundle ({len(self.errors)} problem(s)):\n{shown}{more}"
        )


def timestamp(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with microseconds and a Z, or None."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise ValueError("bundle timestamps must be timezone-aware")
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # isoformat is many times faster than strftime, and a study has tens of thousands of these.
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_timestamp(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.strptime(text, TIMESTAMP_FORMAT).replace(tzinfo=UTC)


# One-line JSON with sorted keys. Without an indent, json uses its C encoder: an indented dump of
# a study of thousands of annotations spends most of its time in the pure-Python one.
_one_line = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(", ", ": ")
).encode


def dumps(bundle: Mapping[str, Any]) -> bytes:
    """The canonical encoding: UTF-8 JSON with sorted keys and a final newline, laid out one
    record per line. The top-level object has one member per line; a member that is a non-empty
    list has one item per line; within a line, items are separated by ", " and keys from values
    by ": ", non-ASCII characters written as they are. The same bundle always gives the same bytes."""
    members = []
    for key in sorted(bundle):
        value = bundle[key]
        if isinstance(value, list) and value:
            items = ",\n".join("    " + _one_line(item) for item in value)
            members.append(f"  {_one_line(key)}: [\n{items}\n  ]")
        else:
            members.append(f"  {_one_line(key)}: {_one_line(value)}")
    text = "{\n" + ",\n".join(members) + "\n}" if members else "{}"
    return (text + "\n").encode("utf-8")


def annotation_key(record: Mapping[str, Any]) -> tuple[str, str, str] | tuple[str, str, str, int]:
    """An annotation's identity: clip, model, annotator, and the attempt of a practice attempt
    after the first."""
    key = (record["clip"], record["model"], record["annotator"])
    attempt = record.get("attempt", 1)
    return key if attempt == 1 else (*key, attempt)


class _Object(dict):
    """A decoded JSON object that remembers the keys it was given twice (``json`` keeps the last
    value of a repeated key without a word)."""

    repeated: list[str]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    seen: set[str] = set()
    obj.repeated = [key for key, _ in pairs if key in seen or seen.add(key)]
    return obj


def _parse(data: bytes | str) -> Any:
    try:
        return json.loads(data, object_pairs_hook=_object)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError([f"not JSON: {exc}"]) from None
    except RecursionError:
        raise BundleError(["not JSON that can be read: nested too deeply"]) from None
    except ValueError as exc:  # a whole number with thousands of digits
        raise BundleError([f"not JSON that can be read: {exc}"]) from None


def _where(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "the bundle"


def values_check(bundle: Any) -> list[str]:
    """What no field of a bundle may hold, wherever it is: a key given twice in one object, a
    number that is not finite (NaN, Infinity), a text with a NUL character (PostgreSQL refuses
    it) or an unpaired surrogate (UTF-8 cannot encode it)."""
    errors: list[str] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), bundle)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key in getattr(value, "repeated", ()):
                errors.append(f"{_where(path)}: the key {key!r} is given twice")
            stack.extend(((*path, key), item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(((*path, n), item) for n, item in reversed(list(enumerate(value))))
        elif isinstance(value, float) and not math.isfinite(value):
            errors.append(f"{_where(path)}: {value} is not a finite number")
        elif isinstance(value, str) and (reason := unstorable_character(value)):
            errors.append(f"{_where(path)}: {reason}")
    return errors


def loads(data: bytes | str) -> dict[str, Any]:
    """Parse, upgrade to the current version and check a bundle; BundleError lists every problem."""
    bundle: Any = _parse(data)
    if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
        raise BundleError([f'not a study bundle: the "format" field must be {FORMAT!r}'])
    version = bundle.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError(['"format_version" must be a whole number from 1'])
    if version > FORMAT_VERSION:
        raise BundleError(
            [
                f"this bundle is format version {version}; this Redline reads versions up to "
                f"{FORMAT_VERSION}. Import it with a newer Redline."
            ]
        )
    while version < FORMAT_VERSION:
        bundle = UPGRADES[version](bundle)
        version = bundle["format_version"] = version + 1
    errors = values_check(bundle) + check(bundle)
    if errors:
        raise BundleError(errors)
    return dict(bundle)


def _is_timestamp(value: Any) -> bool:
    try:
        parse_timestamp(value)
    except (TypeError, ValueError):
        return False
    return True


def _duplicates(keys: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    repeated = []
    for key in keys:
        if key in seen:
            repeated.append(key)
        seen.add(key)
    return repeated


def check(bundle: Mapping[str, Any]) -> list[str]:
    """Everything wrong with a bundle of the current version, in words; empty when usable.

    Checks structure, references between sections and the taxonomy hashes. Rules the
    database enforces itself (timelines, workflow constraints) are left to it.
    """
    errors: list[str] = []
    for name, kind in SECTIONS.items():
        if not isinstance(bundle.get(name), kind):
            errors.append(f'"{name}" must be a JSON {"object" if kind is dict else "array"}')
    if errors:
        return errors

    def need(record: Any, where: str, fields: Mapping[str, type | tuple[type, ...]]) -> bool:
        if not isinstance(record, dict):
            errors.append(f"{where}: must be an object")
            return False
        ok = True
        for field, kind in fields.items():
            value = record.get(field)
            if not isinstance(value, kind) or (
                isinstance(value, bool) and bool not in _as_tuple(kind)
            ):
                errors.append(f"{where}: {field!r} is missing or not {_describe(kind)}")
                ok = False
            elif isinstance(value, int) and not isinstance(value, bool) and not (
                0 <= value <= (MAX_BYTES if field == "size_bytes" else MAX_WHOLE)
            ):
                errors.append(f"{where}: {field!r} is {value}, out of range")
                ok = False
        return ok

    def present(record: Mapping[str, Any], where: str, *fields: str) -> None:
        for field in fields:
            if field not in record:
                errors.append(f"{where}: {field!r} is missing (write null for none)")

    def stamp(record: Mapping[str, Any], where: str, *fields: str, optional: bool = False) -> None:
        for field in fields:
            value = record.get(field)
            if (value is None and optional) or _is_timestamp(value):
                continue
            errors.append(
                f"{where}: {field!r} must be a UTC timestamp like 2026-01-31T12:00:00.000000Z"
            )

    taxonomies = {}
    for n, taxonomy in enumerate(bundle["taxonomies"]):
        where = f"taxonomies[{n}]"
        if not need(
            taxonomy,
            where,
            {
                "content_hash": str,
                "name": str,
                "version": int,
                "modes": list,
                "precedence_rules": list,
                "description": str,
            },
        ):
            continue
        stamp(taxonomy, where, "frozen_at", optional=True)
        modes = taxonomy["modes"]
        if not all(
            isinstance(m, dict) and all(isinstance(m.get(f), str) for f in MODE_FIELDS)
            for m in modes
        ):
            errors.append(f"{where}: every mode needs the text fields {', '.join(MODE_FIELDS)}")
            continue
        for m, mode in enumerate(modes):
            if mode["level"] not in MODE_LEVELS:
                errors.append(f"{where}.modes[{m}].level: {mode['level'][:40]!r} is not one of "
                              f"{', '.join(MODE_LEVELS)}")
        if taxonomy_hash(modes, taxonomy["precedence_rules"]) != taxonomy["content_hash"]:
            errors.append(
                f"{where}: the content hash does not match its modes and rules (edited by hand?)"
            )
        taxonomies[taxonomy["content_hash"]] = {m["key"] for m in modes}

    study = bundle["study"]
    if need(
        study,
        "study",
        {
            "slug": str,
            "name": str,
            "description": str,
            "taxonomy": str,
            "word_thresholds": list,
            "near_total_cut": (int, float),
            "length_band": (int, float),
            "assignment_design": str,
            "spread_gap": int,
            "assignment_seed": int,
            "state": str,
            "caption_language": str,
            "overlap_share": (int, float),
        },
    ):
        stamp(study, "study", "created_at")
        present(study, "study", "undo_seconds")
        for field, known in (("state", STUDY_STATES), ("caption_language", CAPTION_LANGUAGES)):
            if study[field] not in known:
                errors.append(f"study.{field}: {study[field][:40]!r} is not one of {', '.join(known)}")
        if not 0 <= study["overlap_share"] <= 1:
            errors.append(f"study.overlap_share: must be a number from 0 to 1, not {study['overlap_share']}")
        undo = study.get("undo_seconds")
        if undo is not None and (
            not isinstance(undo, int) or isinstance(undo, bool) or not 0 <= undo <= UNDO_SECONDS_MAX
        ):
            errors.append(f"study.undo_seconds: must be null (the site's UNDO_SECONDS) or a whole "
                          f"number of seconds from 0 to {UNDO_SECONDS_MAX:,}, not {str(undo)[:40]}")
        if study["assignment_design"] not in DESIGNS:
            errors.append(f"study.assignment_design: {study['assignment_design']!r} is not one of "
                          f"{', '.join(DESIGNS)}")
        if not 0 <= study["spread_gap"] <= 1000:
            errors.append("study.spread_gap: must be a whole number from 0 to 1000")
        if slug_problem(study["slug"]):
            errors.append(f"study.slug: {slug_problem(study['slug'])}")
        if not all(isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= MAX_WHOLE
                   for t in study["word_thresholds"]):
            errors.append("study.word_thresholds: must be whole numbers from 1")
        if study["taxonomy"] not in taxonomies:
            errors.append("study: its taxonomy hash is not among the bundle's taxonomies")

    users = bundle["users"]
    if not all(isinstance(u, str) and u for u in users):
        errors.append('"users" must be a list of usernames')
    for n, username in enumerate(users):
        if isinstance(username, str) and username and (problem := username_problem(username)):
            errors.append(f"users[{n}]: {problem}")
    users_known = {u for u in users if isinstance(u, str)}
    for username in _duplicates([u for u in users if isinstance(u, str)]):
        errors.append(f"users: {username!r} is listed twice")

    def user(value: Any, where: str, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if value not in users_known:
            errors.append(f'{where}: user {value!r} is not in "users"')

    for n, member in enumerate(bundle["members"]):
        where = f"members[{n}]"
        if need(member, where, {"user": str, "role": str}):
            user(member["user"], where)
            if member["role"] not in ROLES:
                errors.append(f"{where}: unknown role {member['role']!r}")
            stamp(member, where, "created_at")

    roles_of: dict[str, set[str]] = {}
    for member in bundle["members"]:
        if isinstance(member, dict) and isinstance(member.get("user"), str):
            roles_of.setdefault(member["user"], set()).add(member.get("role"))
    for username, roles in sorted(roles_of.items()):
        if {"annotator", "researcher"} <= roles:
            errors.append(
                f"members: {username!r} is both annotator and researcher; annotators work blind "
                "to the models, so nobody holds both roles in one study"
            )

    clips = set()
    for n, clip in enumerate(bundle["clips"]):
        where = f"clips[{n}]"
        if need(
            clip,
            where,
            {
                "name": str,
                "sha256": str,
                "duration": (int, float),
                "fps": (int, float),
                "width": int,
                "height": int,
                "size_bytes": int,
                "files": dict,
                "properties": dict,
                "manipulated": bool,
                "original_filename": str,
                "codec": str,
                "pix_fmt": str,
                "container": str,
                "media_error": str,
            },
        ):
            stamp(clip, where, "created_at")
            clips.add(clip["name"])
            shots = clip.get("shot_changes")
            if shots is not None and not (
                isinstance(shots, list)
                and all(isinstance(t, int | float) and not isinstance(t, bool) for t in shots)
            ):
                errors.append(f'{where}: "shot_changes" must be null or a list of seconds')
            problem = clip_name_problem(clip["name"])
            if problem:
                errors.append(f"{where}.name: {problem}")
            for field, most in (("duration", MAX_CLIP_SECONDS), ("fps", MAX_FPS)):
                if not 0 < clip[field] <= most:
                    errors.append(f"{where}.{field}: must be more than 0 and at most {most:,}, "
                                  f"not {clip[field]}")
            files = clip["files"]
            for kind in sorted(set(files) - set(CLIP_FILE_KINDS)):
                errors.append(f"{where}.files: unknown file {kind!r}")
            for kind in CLIP_FILE_KINDS:
                path = files.get(kind, "")
                if not isinstance(path, str):
                    errors.append(f"{where}.files.{kind}: must be a path or empty")
                elif path:  # "" = no such file (docs/bundle-format.md), the original too
                    problem = media_path_problem(path, kind, str(study.get("slug")))
                    if problem:
                        errors.append(f"{where}.files.{kind}: {problem}")
    for name in _duplicates([c.get("name") for c in bundle["clips"] if isinstance(c, dict)]):
        errors.append(f"clips: {name!r} is listed twice")

    models = set()
    for n, model in enumerate(bundle["models"]):
        where = f"models[{n}]"
        if need(
            model,
            where,
            {"name": str, "alias": str, "identifier": str, "route": str, "providers": list},
        ):
            stamp(model, where, "created_at")
            models.add(model["name"])
            if not model["name"].strip() or len(model["name"]) > MAX_NAME_CHARS:
                errors.append(f"{where}.name: must be 1 to {MAX_NAME_CHARS} characters")
    for name in _duplicates([m.get("name") for m in bundle["models"] if isinstance(m, dict)]):
        errors.append(f"models: {name!r} is listed twice")
    # The alias is all an annotator sees of a model: it must not give the model away.
    real_names = {
        str(m.get(key, "")).strip().casefold()
        for m in bundle["models"] if isinstance(m, dict) for key in ("name", "identifier")
    } - {""}
    aliases = []
    for n, model in enumerate(bundle["models"]):
        if not isinstance(model, dict) or not isinstance(model.get("alias"), str):
            continue
        alias = model["alias"].strip()
        aliases.append(alias.casefold())
        if not alias or len(alias) > MAX_ALIAS_CHARS:
            errors.append(f"models[{n}].alias: must be 1 to {MAX_ALIAS_CHARS} characters")
        elif alias.casefold() in real_names:
            errors.append(
                f"models[{n}].alias: {alias!r} is the name of a model; blind review needs a "
                "neutral alias"
            )
    for alias in _duplicates(aliases):
        errors.append(f"models: the alias {alias!r} is given to two models")

    windows_of: dict[tuple[str, str], set[int]] = {}
    for n, caption in enumerate(bundle["captions"]):
        where = f"captions[{n}]"
        if not need(
            caption,
            where,
            {"clip": str, "model": str, "overview": str, "windows": list, "meta": dict,
             "retried": bool, "re_encoded": bool, "invalid_kept": bool,
             "validation_errors": list},
        ):
            continue
        stamp(caption, where, "created_at")
        speed = caption.get("input_tokens_per_second")
        if speed is not None and (isinstance(speed, bool) or not isinstance(speed, int | float)):
            errors.append(f"{where}: 'input_tokens_per_second' must be a number or null")
        if caption["clip"] not in clips:
            errors.append(f'{where}: clip {caption["clip"]!r} is not in "clips"')
        if caption["model"] not in models:
            errors.append(f'{where}: model {caption["model"]!r} is not in "models"')
        key = (caption["clip"], caption["model"])
        if key in windows_of:
            errors.append(f"{where}: a second caption of model {key[1]!r} for clip {key[0]!r}")
        indexes = set()
        if len(caption["windows"]) > MAX_WINDOWS:
            errors.append(f"{where}.windows: {len(caption['windows']):,} windows; a caption may "
                          f"have at most {MAX_WINDOWS:,}")
        for w, window in enumerate(caption["windows"]):
            if need(
                window,
                f"{where}.windows[{w}]",
                {
                    "index": int,
                    "start": (int, float),
                    "end": (int, float),
                    "scene": str,
                    "shot": str,
                },
            ):
                if window["index"] in indexes:
                    errors.append(f"{where}.windows[{w}]: a second window {window['index']}")
                if not 0 <= window["start"] < window["end"]:
                    errors.append(
                        f"{where}.windows[{w}]: start {window['start']} must be 0 or more and "
                        f"before end {window['end']}"
                    )
                indexes.add(window["index"])
        windows_of[key] = indexes

    for n, reference in enumerate(bundle["references"]):
        where = f"references[{n}]"
        if need(
            reference,
            where,
            {"clip": str, "source": str, "language": str, "text": str, "text_sha256": str},
        ):
            stamp(reference, where, "created_at")
            if reference["clip"] not in clips:
                errors.append(f'{where}: clip {reference["clip"]!r} is not in "clips"')
            digest = hashlib.sha256(reference["text"].encode("utf-8", "surrogatepass")).hexdigest()
            if reference["text_sha256"] != digest:
                errors.append(f"{where}.text_sha256: does not match the reference's text (edited "
                              "by hand?)")

    def numbered_version(version: Mapping[str, Any], where: str, numbers: set[int], kind: str) -> None:
        """What a version of a versioned text (guidelines, consent) shares: its maker, its times,
        and a number from 1 listed once (added to `numbers`)."""
        present(version, where, "created_by")
        user(version.get("created_by"), where, optional=True)
        stamp(version, where, "created_at", "updated_at")
        if version["number"] < 1:
            errors.append(f"{where}: 'number' must be a whole number from 1")
        elif version["number"] in numbers:
            errors.append(f"{where}: {kind} version {version['number']} is listed twice")
        numbers.add(version["number"])

    guideline_numbers: set[int] = set()
    study_modes = taxonomies.get(study.get("taxonomy")) if isinstance(study, dict) else None
    for n, version in enumerate(bundle["guidelines"]):
        where = f"guidelines[{n}]"
        if not need(version, where, {"number": int, "text": str, "examples": list}):
            continue
        numbered_version(version, where, guideline_numbers, "guideline")
        if problem := guideline_rules.text_problem(version["text"]):
            errors.append(f"{where}.text: {problem}")
        _, problem = guideline_rules.examples_check(version["examples"], study_modes or ())
        if problem:
            errors.append(f"{where}.examples: {problem}")

    def guideline(record: Mapping[str, Any], where: str, field: str) -> None:
        present(record, where, field)
        number = record.get(field)
        if number is not None and number not in guideline_numbers:
            errors.append(f'{where}: {field!r} must be null or the number of a version in "guidelines"')

    withdrawn: set[Any] = set()
    for n, withdrawal in enumerate(bundle["withdrawals"]):
        where = f"withdrawals[{n}]"
        if not need(withdrawal, where, {"user": str, "pseudonym": str, "released": int,
                                        "erase_requested": bool, "erased": int}):
            continue
        user(withdrawal["user"], where)
        if withdrawal["user"] in withdrawn:
            errors.append(f"{where}: {withdrawal['user']!r} withdraws twice")
        withdrawn.add(withdrawal["user"])
        if not withdrawal["pseudonym"].strip() or len(withdrawal["pseudonym"]) > 150:
            errors.append(f"{where}.pseudonym: must be 1 to 150 characters")
        present(withdrawal, where, "erased_at")
        stamp(withdrawal, where, "at")
        stamp(withdrawal, where, "erased_at", optional=True)
        if withdrawal.get("erased_at") is not None and not withdrawal["erase_requested"]:
            errors.append(f"{where}.erased_at: set, but 'erase_requested' is false (only a requested "
                          "erasure is done)")
        if withdrawal["erased"] and withdrawal.get("erased_at") is None:
            errors.append(f"{where}.erased: {withdrawal['erased']} erased, but 'erased_at' is null")

    consent_numbers: set[int] = set()
    for n, version in enumerate(bundle["consent_versions"]):
        where = f"consent_versions[{n}]"
        if not need(version, where, {"number": int, "text": str}):
            continue
        numbered_version(version, where, consent_numbers, "consent")
        if problem := consent_rules.text_problem(version["text"]):
            errors.append(f"{where}.text: {problem}")

    accepted: set[tuple[Any, Any]] = set()
    for n, acceptance in enumerate(bundle["consent_acceptances"]):
        where = f"consent_acceptances[{n}]"
        if not need(acceptance, where, {"user": str, "number": int}):
            continue
        user(acceptance["user"], where)
        stamp(acceptance, where, "accepted_at")
        if acceptance["number"] not in consent_numbers:
            errors.append(f'{where}: consent version {acceptance["number"]} is not in "consent_versions"')
        key = (acceptance["user"], acceptance["number"])
        if key in accepted:
            errors.append(f"{where}: {key[0]!r} accepts consent version {key[1]} twice")
        accepted.add(key)

    annotations: set[tuple] = set()
    gold_annotations: set[tuple[str, str]] = set()
    for n, annotation in enumerate(bundle["annotations"]):
        where = f"annotations[{n}]"
        if not need(
            annotation,
            where,
            {
                "clip": str,
                "model": str,
                "annotator": str,
                "taxonomy": str,
                "state": str,
                "version": int,
                "passes": dict,
                "telemetry": dict,
                "ui_state": dict,
                "active_seconds": (int, float),
                "returned_units": list,
            },
        ):
            continue
        share = annotation["telemetry"].get("watched_share", 0)
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            errors.append(f"{where}.telemetry.watched_share: must be a number from 0 to 1, not "
                          f"{str(share)[:40]!r}")
        for field in ("queue_position", "exposure"):
            value = annotation.get(field)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_WHOLE
            ):
                errors.append(f"{where}: '{field}' must be null or a whole number from 1")
        for u, unit in enumerate(annotation["returned_units"]):
            if not (isinstance(unit, dict) and all(
                isinstance(unit.get(key), str) for key in ("unit", "comment", "reply")
            )):
                errors.append(f"{where}.returned_units[{u}]: must be {{unit, comment, reply, before}} "
                              "with text unit, comment and reply")
        guideline(annotation, where, "review_guideline_version")
        present(annotation, where, "reviewer", "return_comment", "assigned_at",
                "overview_locked_at", "claim_expires_at", "started_at", "submitted_at",
                "reviewed_at")
        if not isinstance(annotation.get("return_comment", ""), str):
            errors.append(f"{where}: 'return_comment' must be text")
        purpose, attempt = annotation.get("purpose", "work"), annotation.get("attempt", 1)
        if purpose not in PURPOSES:
            errors.append(f"{where}: unknown purpose {str(purpose)[:40]!r} (purposes are {', '.join(PURPOSES)})")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= 1000 or (
                attempt != 1 and purpose != "practice"):
            errors.append(f"{where}: 'attempt' must be a whole number from 1, above 1 only for a practice attempt")
            continue
        if purpose == "gold":
            gold_annotations.add((annotation["clip"], annotation["model"]))
        identity = annotation_key(annotation)
        if identity in annotations:
            errors.append(
                f"{where}: {identity[2]!r} annotates the caption of {identity[1]!r} "
                f"on {identity[0]!r} twice"
            )
        annotations.add(identity)
        caption = (annotation["clip"], annotation["model"])
        if caption not in windows_of:
            errors.append(f"{where}: no caption of model {caption[1]!r} for clip {caption[0]!r}")
        if annotation["state"] not in STATES:
            errors.append(f"{where}: unknown state {annotation['state']!r}")
        if annotation["taxonomy"] not in taxonomies:
            errors.append(f"{where}: its taxonomy hash is not among the bundle's taxonomies")
        user(annotation["annotator"], where)
        user(annotation.get("reviewer"), where, optional=True)
        stamp(annotation, where, "assigned_at")
        stamp(
            annotation,
            where,
            "overview_locked_at",
            "claim_expires_at",
            "started_at",
            "submitted_at",
            "reviewed_at",
            optional=True,
        )
        for kind, correction in annotation["passes"].items():
            if kind not in PASS_KINDS:
                errors.append(
                    f"{where}: unknown pass {kind!r} (passes are {', '.join(PASS_KINDS)})"
                )
                continue
            if correction is None:
                continue
            pass_where = f"{where}.passes.{kind}"
            if not need(
                correction,
                pass_where,
                {"author": str, "overview": dict, "segmentation": dict, "windows": list},
            ):
                continue
            user(correction["author"], pass_where)
            stamp(correction, pass_where, "updated_at")
            guideline(correction, pass_where, "guideline_version")
            for part in ("overview", "segmentation"):
                if correction[part].get("verdict") not in VERDICTS:
                    errors.append(
                        f"{pass_where}.{part}: verdict must be one of accept, reject or empty"
                    )
            need(correction["overview"], f"{pass_where}.overview", {"text": str, "modes": list})
            need(correction["segmentation"], f"{pass_where}.segmentation",
                 {"modes": list, "windows": list})
            for w, row in enumerate(correction["windows"]):
                if need(
                    row,
                    f"{pass_where}.windows[{w}]",
                    {"index": int, "verdict": str, "modes": list, "scene": str, "shot": str,
                     "start": (int, float), "end": (int, float)},
                ):
                    if row["index"] not in windows_of.get(caption, set()):
                        errors.append(
                            f"{pass_where}.windows[{w}]: the caption has no window {row['index']}"
                        )

    gold_items = bundle["study"].get("gold_items", [])
    if not isinstance(gold_items, list):
        errors.append('study.gold_items: must be a JSON array')
        gold_items = []
    seen_gold: set[tuple[str, str]] = set()
    for n, item in enumerate(gold_items):
        where = f"study.gold_items[{n}]"
        if need(item, where, {"clip": str, "model": str, "in_practice_set": bool, "source": str}):
            caption = (item["clip"], item["model"])
            if caption not in gold_annotations:
                errors.append(f"{where}: no gold annotation of model {item['model']!r} for clip {item['clip']!r}")
            if caption in seen_gold:
                errors.append(f"{where}: the caption of {item['model']!r} for {item['clip']!r} is listed twice")
            seen_gold.add(caption)

    for n, event in enumerate(bundle["audit"]):
        where = f"audit[{n}]"
        if not need(event, where, {"action": str, "before": dict, "after": dict}):
            continue
        present(event, where, "actor", "annotation")
        stamp(event, where, "at")
        user(event.get("actor"), where, optional=True)
        target = event.get("annotation")
        if target is not None:
            if not isinstance(target, dict) or not all(
                isinstance(target.get(f), str) for f in ("clip", "model", "annotator")
            ):
                errors.append(f'{where}: "annotation" must be null or {{clip, model, annotator}}')
            elif annotation_key(target) not in annotations:
                errors.append(f"{where}: no such annotation {annotation_key(target)}")
    return errors


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _describe(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "text",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        list: "an array",
        dict: "an object",
    }
    kinds = _as_tuple(kind)
    if set(kinds) == {int, float}:
        return "a number"
    return " or ".join(names.get(k, k.__name__) for k in kinds)
