"""A study's guidelines: written by its admins, versioned, shown to annotators and QC reviewers.

- **Writing** (:func:`guidelines_save`, a settings-like write: closed and archived studies refuse
  it). While the study is in setup, an edit replaces the one draft (nobody has worked under it:
  work opens when the study starts); once the study runs, each edit that changes something is a
  new version, numbered on. Every edit is audited as ``guidelines_update`` in the study's
  history, with the version, the text's SHA-256 and size and the number of examples before and
  after (the texts themselves are the versions).
- **Reading**: the current version, any version, and the diff between two
  (:func:`guidelines_diff`, words within changed lines; texts are untrusted and every page shows
  the diff as text).
- **The notice**: a person who works in a running study is told of a version newer than the last
  one they dismissed (:func:`guidelines_notice`), with the diff, until they dismiss it
  (:func:`guideline_notice_dismiss`).
- **Verdicts** record the version they were given under (:func:`guideline_version_now`, called
  by the submit, approve and amend services).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction
from django.db.models import Subquery

from annotation.errors import FieldErrors
from annotation.models import AuditEvent, GuidelineNotice, GuidelineVersion, Study, StudyState
from annotation.prepared import prepared
from annotation.rules import guidelines as text_rules
from annotation.services.study_state import Write, study_allows, study_require
from annotation.services.taxonomy import taxonomy_modes


@prepared
def _newest_guidelines_read(*, study_id: int):
    return GuidelineVersion.objects.filter(study_id=study_id).order_by("-number")[:1]


def guidelines_current(study: Study) -> GuidelineVersion | None:
    """The study's newest guideline version, or None before any was written."""
    newest = _newest_guidelines_read(study_id=study.pk)
    if not newest:
        return None
    newest[0].study = study  # the study at hand, not read again (guideline_view names its modes)
    return newest[0]


def _newest_first(study_id: int):
    return GuidelineVersion.objects.filter(study_id=study_id).order_by("-number").values_list("pk", flat=True)


def guideline_version_now(study_id: int) -> int | None:
    """The id of the study's newest guideline version (what a verdict given now is under)."""
    return _newest_first(study_id).first()


def guideline_version_newest(study_id: int) -> Subquery:
    """guideline_version_now as SQL, for the UPDATE that records it (no statement of its own)."""
    return Subquery(_newest_first(study_id)[:1])


def _mode_names(study: Study) -> dict[str, str]:
    return {mode["key"]: mode["name"] for mode in taxonomy_modes(study.taxonomy)}


def guideline_summary(version: GuidelineVersion | None) -> dict[str, Any]:
    """What the audit trail keeps of a version."""
    if version is None:
        return {}
    return {"version": version.number, "sha256": hashlib.sha256(version.text.encode("utf-8")).hexdigest(),
            "bytes": len(version.text.encode("utf-8")), "examples": len(version.examples)}


@transaction.atomic
def guidelines_save(*, study: Study, actor, text: Any, examples: Any = None) -> tuple[GuidelineVersion, bool]:
    """Store the study's guidelines: (the version now current, whether a new version was made).

    Refused with FieldErrors naming `text` (over TEXT_MAX_BYTES, not text) or `examples` (a mode
    outside the study's taxonomy, a field too long...), nothing stored. Unchanged guidelines
    store nothing."""
    study = Study.objects.select_for_update().select_related("taxonomy").get(pk=study.pk)
    study_require(study, Write.SETTINGS)
    cleaned, errors = text_rules.guideline_check(text, examples, _mode_names(study))
    if errors:
        raise FieldErrors(errors)
    current = guidelines_current(study)
    if current is not None and current.text == cleaned["text"] and current.examples == cleaned["examples"]:
        return current, False
    before = guideline_summary(current)
    if current is not None and study.state == StudyState.SETUP:
        current.text, current.examples = cleaned["text"], cleaned["examples"]
        current.save(update_fields=["text", "examples", "updated_at"])
        version, created = current, False
    else:
        version = GuidelineVersion.objects.create(
            study=study, number=(current.number + 1) if current else 1, created_by=actor, **cleaned
        )
        created = True
    after = {**guideline_summary(version), "draft_replaced": not created}
    AuditEvent.objects.create(study=study, actor=actor, action="guidelines_update", before=before, after=after)
    if actor is not None:  # whoever wrote them has read them: no notice for them
        GuidelineNotice.objects.update_or_create(study=study, user=actor, defaults={"number": version.number})
    return version, created


def guideline_view(version: GuidelineVersion, mode_names: dict[str, str] | None = None) -> dict[str, Any]:
    """A version for pages and the API: its Markdown, its sanitised HTML, its examples."""
    names = mode_names if mode_names is not None else _mode_names(version.study)
    return {
        "version": version.number,
        "text": version.text,
        "html": text_rules.render(version.text),
        "examples": [{**example, "mode_name": names.get(example["mode"], example["mode"])}
                     for example in version.examples],
        "created_by": version.created_by.get_username() if version.created_by_id else None,
        "created_at": version.created_at,
        "updated_at": version.updated_at,
    }


def _document(version: GuidelineVersion | None, names: dict[str, str]) -> str:
    if version is None:
        return ""
    return text_rules.document(version.text, version.examples, names)


def guidelines_diff(
    *, study: Study, old: GuidelineVersion | None, new: GuidelineVersion, trim: bool = False
) -> dict[str, Any]:
    """From `old` (None: nothing) to `new`: the text and examples compared word by word within the
    lines that changed. `ops` are [{op: equal|insert|delete, text}]; `trim` shortens long
    unchanged stretches (for a notice)."""
    names = _mode_names(study)
    ops = text_rules.diff(_document(old, names), _document(new, names))
    counts = text_rules.diff_counts(ops)
    if trim:
        ops = text_rules.diff_trim(ops)
    return {"from": old.number if old else None, "to": new.number,
            "ops": [{"op": op, "text": text} for op, text in ops], **counts}


def guidelines_notice(*, study: Study, user) -> dict[str, Any] | None:
    """What to tell `user` about the study's guidelines when they open an item, or None.

    `kind` "new": they never dismissed a notice of this study's guidelines (read them); "updated":
    a version newer than the last they dismissed, with the diff from that one. Only while the
    study runs (nothing changes in a closed one, and nobody works in one in setup)."""
    if not study_allows(study, Write.WORK):
        return None
    current = guidelines_current(study)
    if current is None:
        return None
    seen = GuidelineNotice.objects.filter(study=study, user=user).values_list("number", flat=True).first()
    if seen is not None and seen >= current.number:
        return None
    if seen is None:
        return {"kind": "new", "from": None, "to": current.number, "ops": [], "words_added": 0,
                "words_removed": 0}
    old = GuidelineVersion.objects.filter(study=study, number=seen).first()
    return {"kind": "updated", **guidelines_diff(study=study, old=old, new=current, trim=True)}


@transaction.atomic
def guideline_notice_dismiss(*, study: Study, user, version: Any) -> int:
    """`user` read the study's guidelines up to `version`: no notice until a newer one. Give the
    version now dismissed (never lower than one dismissed before)."""
    study_require(study, Write.WORK)
    if isinstance(version, bool) or not isinstance(version, int):
        raise FieldErrors({"version": "Give the number of the guideline version read."})
    if not GuidelineVersion.objects.filter(study=study, number=version).exists():
        raise FieldErrors({"version": f"Study {study.name} has no guideline version {version}."})
    notice, created = GuidelineNotice.objects.select_for_update().get_or_create(
        study=study, user=user, defaults={"number": version})
    if not created and notice.number < version:
        notice.number = version
        notice.save(update_fields=["number", "dismissed_at"])
    return notice.number
