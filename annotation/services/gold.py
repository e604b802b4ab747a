"""Gold items, the practice set, qualification and hidden gold checks (docs/gold.md).

How the rows read (annotation.models: Annotation.purpose, GoldItem, Qualification):

- **Gold verdicts.** A study admin or gold expert makes a caption a gold item
  (:func:`gold_start`): a gold annotation (purpose ``gold``) of theirs on it, worked in the
  ordinary workspace; submitted, its annotator pass is the gold correction (no QC). Or gold
  verdicts come from a file in the bundle's annotation format (:func:`gold_import`). The maker
  of an item's gold verdict never gets that item to annotate, practise, check or review.
- **The practice set** is the gold items marked ``in_practice_set``, with the pass rule in the
  study's settings (:func:`practice_configure`). A new annotator's next item is a practice item
  until their attempt is done (:func:`practice_begin`, called by ``annotation_start_next``);
  when every item of the attempt is submitted the attempt is evaluated against the gold
  verdicts (:func:`practice_after_submit`, the pure rule in annotation.rules.gold) and the
  qualification says passed or failed, and why. A study admin may allow another attempt
  (:func:`qualification_retry_allow`). When the study requires qualification, only those who
  passed receive real work (:func:`real_work_allowed`).
- **Hidden gold checks.** At the study's gold rate, ``annotation_start_next`` opens a gold
  item instead of the next real item (:func:`gold_check_take`): a gold_check annotation, the
  same flow as work (reviewed too), never counted in the profile. When the pool (ready gold
  items outside the practice set that the annotator has not met) runs out, the queue goes on
  without gold (:func:`gold_pool_status` says so).

Every write asks the study's state rule (Write.GOLD for gold items and settings; practice and
gold checks are work, Write.WORK).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from annotation.errors import FieldErrors, ServiceError
from annotation.models import (
    Annotation,
    AuditEvent,
    Caption,
    CorrectionPass,
    GoldItem,
    Membership,
    Qualification,
    Study,
)
from annotation.prepared import prepared
from annotation.rules import gold as gold_rules
from annotation.rules import study_settings, workflow
from annotation.selectors import queues
from annotation.services.annotation_common import pass_snapshot
from annotation.services.study_state import Write, study_require
from annotation.services.taxonomy import taxonomy_freeze
from scoring.metrics.edits import EditSizing, word_diff

Purpose = Annotation.Purpose
GOLD_MAKERS = (Membership.Role.ADMIN, Membership.Role.EXPERT)


def _audit(
    study: Study,
    actor,
    action: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    annotation: Annotation | None = None,
) -> None:
    AuditEvent.objects.create(
        study=study, actor=actor, action=action, annotation=annotation, before=dict(before), after=dict(after)
    )


# --------------------------------------------------------------------------- reading


def ready_gold(study: Study | int):
    """The study's gold items whose gold verdict is final (submitted); `study` or its id."""
    return GoldItem.objects.filter(study=study, gold__state=workflow.SUBMITTED)


def gold_pass(item: GoldItem) -> dict[str, Any]:
    """The gold correction of a gold item: its gold verdict's annotator pass, as plain data."""
    return pass_snapshot(item.gold.passes.filter(kind=CorrectionPass.Kind.ANNOTATOR).first())


def gold_item_row(item: GoldItem) -> dict[str, Any]:
    """A gold item as the API lists it (the caption by clip and model alias: blind)."""
    return {
        "id": item.pk,
        "caption": item.caption_id,
        "clip": item.caption.clip.name,
        "model": item.caption.model.alias,
        "annotation": item.gold_id,
        "made_by": item.made_by.get_username(),
        "state": item.gold.state,
        "ready": item.gold.state == workflow.SUBMITTED,
        "in_practice_set": item.in_practice_set,
        "source": item.source,
        "created_at": item.created_at.isoformat(),
        "url": f"/annotate/{item.gold_id}/",
    }


def gold_items(study: Study) -> list[GoldItem]:
    return list(
        GoldItem.objects.filter(study=study)
        .select_related("caption__clip", "caption__model", "made_by", "gold")
        .order_by("created_at", "pk")
    )


# --------------------------------------------------------------------------- gold verdicts


def _caption_of(study: Study, caption_id: Any) -> Caption:
    if isinstance(caption_id, bool) or not isinstance(caption_id, int):
        raise FieldErrors({"caption": "Give the caption's id (a whole number)."})
    caption = Caption.objects.filter(pk=caption_id, clip__study=study).select_related("clip", "model").first()
    if caption is None:
        raise FieldErrors({"caption": f"Study {study.name} has no caption {caption_id}."})
    return caption


def _refuse_taken(study: Study, caption: Caption, maker) -> None:
    if GoldItem.objects.filter(caption=caption).exists():
        raise FieldErrors(
            {"caption": f"The caption of {caption.clip.name} by {caption.model.alias} is a gold item already."}
        )
    if Annotation.objects.filter(caption=caption, annotator=maker).exists():
        raise FieldErrors(
            {
                "caption": f"{maker.get_username()} has annotated the caption of {caption.clip.name} by "
                f"{caption.model.alias}: its gold verdict must be someone else's."
            }
        )


@transaction.atomic
def gold_start(*, study: Study, actor, caption_id: Any) -> GoldItem:
    """Make a caption a gold item whose gold verdict `actor` (a study admin or gold expert) makes
    in the workspace (its ``url``); refused for a caption already gold, or one `actor` annotated."""
    study_require(study, Write.GOLD)
    Study.objects.select_for_update().filter(pk=study.pk).first()
    caption = _caption_of(study, caption_id)
    _refuse_taken(study, caption, actor)
    taxonomy = taxonomy_freeze(taxonomy=study.taxonomy)
    annotation = Annotation.objects.create(caption=caption, annotator=actor, taxonomy=taxonomy, purpose=Purpose.GOLD)
    try:
        with transaction.atomic():
            item = GoldItem.objects.create(study=study, caption=caption, gold=annotation, made_by=actor)
    except IntegrityError as exc:  # another request made it gold meanwhile
        raise FieldErrors({"caption": "This caption was just made a gold item by someone else."}) from exc
    _audit(
        study,
        actor,
        "gold_start",
        {},
        {"caption": caption.pk, "clip": caption.clip.name, "model": caption.model.alias},
        annotation,
    )
    return item


# --------------------------------------------------------------------------- practice set


def _largest_queue(study: Study) -> int:
    counts = (
        Annotation.objects.filter(caption__clip__study=study, purpose=Purpose.WORK)
        .order_by()
        .values("annotator_id")
        .annotate(n=Count("pk"))
        .values_list("n", flat=True)
    )
    return max(counts, default=0)


def practice_state(study: Study) -> dict[str, Any]:
    """The practice set, its rule, the gold settings and the gold pool, as the API shows them."""
    items = gold_items(study)
    ready = [item for item in items if item.gold.state == workflow.SUBMITTED]
    return {
        "practice_items": [item.pk for item in items if item.in_practice_set],
        "gold_items": [gold_item_row(item) for item in items],
        "settings": {field: getattr(study, field) for field in study_settings.GOLD_FIELDS},
        "meanings": {field: study_settings.MEANINGS[field] for field in study_settings.GOLD_FIELDS},
        "pool": gold_pool_status(study, ready=ready),
    }


def gold_pool_status(study: Study, *, ready: Sequence[GoldItem] | None = None) -> dict[str, Any]:
    """The hidden checks' pool: ready gold items outside the practice set, what the largest queue
    needs at the rate, and the annotators who met every item of the pool (their queue goes on
    without gold)."""
    if ready is None:
        ready = list(ready_gold(study))
    pool = [item for item in ready if not item.in_practice_set]
    pool_ids = [item.caption_id for item in pool]
    largest = _largest_queue(study)
    exhausted: list[str] = []
    if study.gold_rate > 0 and pool_ids:
        # Per annotator: the pool's items they did not make, less those they met already.
        met = dict(
            Annotation.objects.filter(caption_id__in=pool_ids)
            .exclude(purpose=Purpose.GOLD)
            .order_by()
            .values("annotator_id")
            .annotate(n=Count("caption_id", distinct=True))
            .values_list("annotator_id", "n")
        )
        for user_id, name in Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR).values_list(
            "user_id", "user__username"
        ):
            available = sum(1 for item in pool if item.made_by_id != user_id)
            if met.get(user_id, 0) >= available:
                exhausted.append(name)
        exhausted.sort()
    return {
        "pool": len(pool_ids),
        "rate": study.gold_rate,
        "largest_queue": largest,
        "needed": gold_rules.gold_checks_needed(rate=study.gold_rate, queue_items=largest),
        "exhausted_for": exhausted,
        "running_out": bool(study.gold_rate > 0 and (not pool_ids or exhausted)),
    }


@transaction.atomic
def practice_configure(
    *, study: Study, actor, practice_items: Any = None, settings: Mapping[str, Any] | None = None
) -> Study:
    """Choose the practice set (`practice_items`: gold item ids; None leaves it) and change the
    gold settings (`settings`: any of study_settings.GOLD_FIELDS). Refused, naming the field and
    storing nothing: an unknown setting or one out of its range, a practice item that is not a
    ready gold item of the study, qualification required without a practice set, a pass rule that
    asks for more items than the set holds, a gold rate the pool cannot serve."""
    study_require(study, Write.GOLD)
    study = Study.objects.select_for_update().get(pk=study.pk)
    settings = dict(settings or {})
    errors: dict[str, str] = {}
    unknown = sorted(set(settings) - set(study_settings.GOLD_FIELDS))
    for field in unknown:
        errors[field] = "This is not a gold or qualification setting."
    cleaned, problems = study_settings.settings_check(
        {k: v for k, v in settings.items() if k not in unknown}, designs=(), languages=()
    )
    errors.update(problems)
    items = gold_items(study)
    by_id = {item.pk: item for item in items}
    chosen = {item.pk for item in items if item.in_practice_set}
    if practice_items is not None:
        if not isinstance(practice_items, list) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in practice_items
        ):
            errors["practice_items"] = "Give the practice set as a list of gold item ids."
        else:
            strangers = [i for i in practice_items if i not in by_id]
            unready = [i for i in practice_items if i in by_id and by_id[i].gold.state != workflow.SUBMITTED]
            if strangers:
                errors["practice_items"] = (
                    f"Gold item {strangers[0]} is not one of study {study.name}'s: a practice "
                    "set is made of the study's gold items."
                )
            elif unready:
                errors["practice_items"] = (
                    f"Gold item {unready[0]} has no submitted gold verdict yet: finish it in the workspace first."
                )
            else:
                chosen = set(practice_items)
    if errors:
        raise FieldErrors(errors)
    after = {field: cleaned.get(field, getattr(study, field)) for field in study_settings.GOLD_FIELDS}
    if after["requires_qualification"] and not chosen:
        errors["practice_items" if practice_items is not None else "requires_qualification"] = (
            "Qualification needs a practice set: choose gold items for it first (a practice set without "
            "gold cannot qualify anyone)."
        )
    if chosen and after["practice_min_items"] > len(chosen):
        errors["practice_min_items"] = (
            f"The pass rule asks for at least {after['practice_min_items']} practice "
            f"items but the practice set holds {len(chosen)}."
        )
    pool = sum(1 for item in items if item.gold.state == workflow.SUBMITTED and item.pk not in chosen)
    problem = gold_rules.gold_rate_problem(rate=after["gold_rate"], pool=pool, largest_queue=_largest_queue(study))
    if problem and (after["gold_rate"] != study.gold_rate or practice_items is not None):
        errors["gold_rate"] = problem
    if errors:
        raise FieldErrors(errors)
    before_settings = {f: getattr(study, f) for f in study_settings.GOLD_FIELDS if getattr(study, f) != after[f]}
    changed = {f: after[f] for f in before_settings}
    before_set = sorted(item.pk for item in items if item.in_practice_set)
    if changed:
        for field, value in changed.items():
            setattr(study, field, value)
        study.full_clean()
        study.save(update_fields=list(changed))
    if sorted(chosen) != before_set:
        GoldItem.objects.filter(study=study).exclude(pk__in=list(chosen)).update(in_practice_set=False)
        GoldItem.objects.filter(study=study, pk__in=list(chosen)).update(in_practice_set=True)
        before_settings["practice_items"], changed["practice_items"] = before_set, sorted(chosen)
    if changed:
        _audit(study, actor, "practice_configure", before_settings, changed)
    return study


# --------------------------------------------------------------------------- qualification


@prepared
def _qualification_read(*, study_id: int, user_id: int):
    return Qualification.objects.filter(study_id=study_id, user_id=user_id)  # one at most (a constraint)


def qualification_of(study: Study, user) -> Qualification:
    """The person's qualification in the study (unsaved and not started when they have none)."""
    found = _qualification_read(study_id=study.pk, user_id=user.pk)
    return found[0] if found else Qualification(study=study, user=user)


def real_work_allowed(study: Study, user) -> bool:
    """Whether the person receives real work: always, unless the study requires qualification
    and they have not passed its practice set."""
    return queues.real_work_allowed(study, user)


@prepared
def _practice_set_read(*, study_id: int):
    return ready_gold(study_id).filter(in_practice_set=True).order_by("created_at", "pk")


def practice_set(study: Study) -> list[GoldItem]:
    """The study's practice items, in the order they were made (read on every "start next")."""
    return _practice_set_read(study_id=study.pk)


def practice_begin(*, study: Study, annotator) -> Qualification | None:
    """Start the annotator's practice attempt when one is due: the study has a practice set and
    they have not passed, nor used up their attempts; their practice items join their queue
    (first). None when there is no practice for them now. Called inside the caller's
    transaction (annotation_start_next, the practice page's start)."""
    practice = practice_set(study)
    if not practice:
        return None
    if not Membership.objects.filter(study=study, user=annotator, role=Membership.Role.ANNOTATOR).exists():
        return None  # an admin or gold expert pressing Start next does not practise
    qualification, _ = Qualification.objects.select_for_update().get_or_create(study=study, user=annotator)
    if qualification.state in (Qualification.State.PASSED, Qualification.State.PRACTISING):
        return qualification
    if qualification.attempts >= qualification.attempts_allowed:
        return qualification  # failed: a study admin decides on another attempt
    study_require(study, Write.WORK)
    attempt = qualification.attempts + 1
    met = set(
        Annotation.objects.filter(annotator=annotator, caption__clip__study=study)
        .exclude(purpose=Purpose.PRACTICE)
        .values_list("caption_id", flat=True)
    )
    taxonomy = taxonomy_freeze(taxonomy=study.taxonomy)
    rows = [
        Annotation(
            caption_id=item.caption_id,
            annotator=annotator,
            taxonomy=taxonomy,
            purpose=Purpose.PRACTICE,
            attempt=attempt,
        )
        for item in practice
        if item.caption_id not in met and item.made_by_id != annotator.pk
    ]
    if not rows:
        return None
    Annotation.objects.bulk_create(rows)
    before = {"state": qualification.state, "attempts": qualification.attempts}
    qualification.state = Qualification.State.PRACTISING
    qualification.attempts = attempt
    qualification.save(update_fields=["state", "attempts", "updated_at"])
    _audit(
        study,
        annotator,
        "practice_begin",
        before,
        {"state": qualification.state, "attempts": attempt, "items": len(rows)},
    )
    return qualification


def practice_notice(study: Study, annotator) -> str | None:
    """A sentence for the annotator's queue about their practice, or None when there is none to say."""
    return _notice(study, qualification_of(study, annotator), len(practice_set(study)))


def practice_standing(study: Study, annotator) -> tuple[str | None, bool]:
    """practice_notice, and whether Start next would begin a practice attempt now (its rows do not
    exist yet), from one read of the qualification and one of the practice set."""
    qualification, practice = qualification_of(study, annotator), practice_set(study)
    return _notice(study, qualification, len(practice)), _due(qualification, has_practice=bool(practice))


def _due(qualification: Qualification, *, has_practice: bool) -> bool:
    if qualification.state in (Qualification.State.PASSED, Qualification.State.PRACTISING):
        return False
    return qualification.attempts < qualification.attempts_allowed and has_practice


def _notice(study: Study, qualification: Qualification, size: int) -> str | None:
    State = Qualification.State
    if qualification.state == State.PASSED:
        return None
    if qualification.state == State.FAILED:
        if qualification.attempts < qualification.attempts_allowed:
            return "A study admin allowed you another attempt at the practice set: press Start next."
        waits = " Real work waits for it." if study.requires_qualification else ""
        return f"You did not pass the practice set; a study admin decides on another attempt.{waits}"
    if qualification.state == State.PRACTISING:
        return "You are on the practice set: each item shows its feedback once you submit it."
    if size:
        required = " You receive real work once you pass it." if study.requires_qualification else ""
        return f"Your queue starts with a practice set of {size} item{'s' if size != 1 else ''}.{required}"
    if study.requires_qualification:
        return "This study asks its annotators to pass a practice set first; it is not ready yet."
    return None


def practice_next(study: Study, annotator) -> int | None:
    """The annotator's open practice item of their current attempt (not yet submitted), or None."""
    rows = _open_practice_item(study_id=study.pk, annotator_id=annotator.pk)
    return rows[0]["pk"] if rows else None


@prepared
def _open_practice_item(*, study_id: int, annotator_id: int):
    """practice_next's read."""
    return (
        Annotation.objects.filter(
            caption__clip__study_id=study_id,
            annotator_id=annotator_id,
            purpose=Purpose.PRACTICE,
            state__in=[workflow.ASSIGNED, workflow.IN_PROGRESS, workflow.RETURNED],
        )
        .order_by("attempt", "assigned_at", "pk")
        .values("pk")[:1]
    )


def _attempt_annotations(study: Study, annotator, attempt: int):
    return (
        Annotation.objects.filter(
            caption__clip__study=study, annotator=annotator, purpose=Purpose.PRACTICE, attempt=attempt
        )
        .select_related("caption__clip", "caption__model")
        .prefetch_related("caption__windows")
        .order_by("assigned_at", "pk")
    )


def _comparison(annotation: Annotation, item: GoldItem) -> gold_rules.ItemComparison:
    mine = pass_snapshot(annotation.passes.filter(kind=CorrectionPass.Kind.ANNOTATOR).first())
    return gold_rules.verdict_compare(
        gold_pass(item), mine, window_indexes=[w.index for w in annotation.caption.windows.all()]
    )


def practice_after_submit(annotation: Annotation) -> Qualification | None:
    """After a practice item is submitted: when it was the attempt's last, evaluate the attempt
    (annotation.rules.gold.practice_evaluate) and record passed or failed with the reasons."""
    if annotation.purpose != Purpose.PRACTICE:
        return None
    study = annotation.caption.clip.study
    rows = list(_attempt_annotations(study, annotation.annotator, annotation.attempt))
    if any(row.state != workflow.SUBMITTED for row in rows):
        return None
    items = {
        item.caption_id: item
        for item in GoldItem.objects.filter(caption_id__in=[row.caption_id for row in rows]).select_related("gold")
    }
    comparisons = [_comparison(row, items[row.caption_id]) for row in rows if row.caption_id in items]
    result = gold_rules.practice_evaluate(comparisons, gold_rules.PassRule.of(study))
    result["attempt"] = annotation.attempt
    qualification, _ = Qualification.objects.select_for_update().get_or_create(
        study=study,
        user=annotation.annotator,
        defaults={"attempts": annotation.attempt, "attempts_allowed": annotation.attempt},
    )
    before = {"state": qualification.state}
    qualification.state = Qualification.State.PASSED if result["passed"] else Qualification.State.FAILED
    qualification.result = result
    qualification.decided_at = timezone.now()
    qualification.save(update_fields=["state", "result", "decided_at", "updated_at"])
    _audit(
        study,
        annotation.annotator,
        "practice_passed" if result["passed"] else "practice_failed",
        before,
        {"state": qualification.state, "attempt": annotation.attempt, "reasons": result["failed"]},
    )
    return qualification


@transaction.atomic
def qualification_retry_allow(*, study: Study, actor, user) -> Qualification:
    """A study admin lets an annotator whose attempt failed practise once more."""
    study_require(study, Write.GOLD)
    qualification = Qualification.objects.select_for_update().filter(study=study, user=user).first()
    if qualification is None or qualification.state != Qualification.State.FAILED:
        state = qualification.get_state_display() if qualification else "not started"
        raise FieldErrors(
            {"user": f"{user.get_username()} has no failed practice attempt to retry (their practice is {state})."}
        )
    if qualification.attempts_allowed > qualification.attempts:
        return qualification
    qualification.attempts_allowed = qualification.attempts + 1
    qualification.save(update_fields=["attempts_allowed", "updated_at"])
    _audit(
        study,
        actor,
        "practice_retry_allow",
        {"attempts_allowed": qualification.attempts},
        {"user": user.get_username(), "attempts_allowed": qualification.attempts_allowed},
    )
    return qualification


def qualification_row(qualification: Qualification, practice_size: int) -> dict[str, Any]:
    result = qualification.result or {}
    return {
        "user": qualification.user.get_username(),
        "state": qualification.state,
        "attempts": qualification.attempts,
        "attempts_allowed": qualification.attempts_allowed,
        "may_retry": qualification.attempts < qualification.attempts_allowed,
        "practice_items": practice_size,
        "decided_at": qualification.decided_at.isoformat() if qualification.decided_at else None,
        "result": result,
    }


def qualifications(study: Study) -> list[dict[str, Any]]:
    """Every annotator of the study with their qualification (not started when they have none)."""
    size = len(practice_set(study))
    kept = {q.user_id: q for q in Qualification.objects.filter(study=study).select_related("user")}
    rows = []
    for membership in (
        Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR)
        .select_related("user")
        .order_by("user__username")
    ):
        qualification = kept.get(membership.user_id) or Qualification(study=study, user=membership.user)
        rows.append(qualification_row(qualification, size))
    return rows


def _final_text(snapshot: Mapping[str, Any], original: str) -> str:
    overview = snapshot.get("overview") or {}
    return overview.get("text", "") if overview.get("verdict") == gold_rules.REJECT else original


def practice_feedback(annotation: Annotation) -> dict[str, Any]:
    """What the annotator sees beside a submitted practice item: their verdicts against the
    gold ones, the modes they missed or added, a redline from their corrected overview to the
    gold correction with its edit size (the study's EditSizing), and, when it was the attempt's
    last item, whether the attempt passed and why. Refused before the item is submitted."""
    if annotation.purpose != Purpose.PRACTICE:
        raise ServiceError("Feedback is given on practice items only.")
    if annotation.state != workflow.SUBMITTED:
        raise ServiceError("Submit this practice item first: its feedback comes after.")
    item = GoldItem.objects.select_related("gold").get(caption_id=annotation.caption_id)
    study = annotation.caption.clip.study
    comparison = _comparison(annotation, item)
    gold = gold_pass(item)
    mine = pass_snapshot(annotation.passes.filter(kind=CorrectionPass.Kind.ANNOTATOR).first())
    original = annotation.caption.overview
    sizing = EditSizing.of(study)
    yours_text, gold_text = _final_text(mine, original), _final_text(gold, original)
    size = sizing.measure(yours_text, gold_text)
    rows = list(_attempt_annotations(study, annotation.annotator, annotation.attempt))
    qualification = qualification_of(study, annotation.annotator)
    done = sum(1 for row in rows if row.state == workflow.SUBMITTED)
    finished = done == len(rows)
    return {
        "annotation": annotation.pk,
        "attempt": annotation.attempt,
        "comparison": comparison.as_dict(),
        "overview": {
            "yours": yours_text,
            "gold": gold_text,
            "redline": [
                {"op": s.op, "text": s.text} for s in word_diff(yours_text, gold_text, language=sizing.language)
            ],
            "edit_size": {
                "words_changed": size.words_changed,
                "char_similarity": size.char_similarity,
                "chars_changed": size.chars_changed,
                "near_total": size.near_total,
            },
        },
        "gold_windows": gold.get("windows", []),
        "progress": {"done": done, "total": len(rows)},
        "finished": finished,
        "qualification": qualification_row(qualification, len(rows)) if finished and qualification.pk else None,
    }


# --------------------------------------------------------------------------- gold checks


def gold_check_take(*, study: Study, annotator) -> int | None:
    """Open-able gold check for the annotator's next item when the draw says one is due
    (annotation.rules.gold.gold_check_due at the study's gold rate): a new gold_check
    annotation on a ready gold item outside the practice set that they neither made nor met;
    None when none is due or the pool ran out for them. Inside the caller's transaction."""
    if study.gold_rate <= 0:
        return None
    slot = Annotation.objects.filter(
        caption__clip__study=study,
        annotator=annotator,
        purpose__in=Annotation.REAL_WORK,
        started_at__isnull=False,
    ).count()
    if not gold_rules.gold_check_due(
        seed=study.assignment_seed, annotator_id=annotator.pk, slot=slot, rate=study.gold_rate
    ):
        return None
    met = Annotation.objects.filter(annotator=annotator, caption_id=OuterRef("caption_id"))
    pool = list(
        ready_gold(study)
        .filter(in_practice_set=False)
        .exclude(made_by=annotator)
        .exclude(Exists(met))
        .order_by("pk")
        .values_list("caption_id", flat=True)
    )
    if not pool:
        return None
    # Which gold item: drawn from the same seed, so two annotators meet the pool in different orders.
    caption_id = pool[_draw_index(study.assignment_seed, annotator.pk, slot, len(pool))]
    annotation = Annotation.objects.create(
        caption_id=caption_id, annotator=annotator, taxonomy=study.taxonomy, purpose=Purpose.GOLD_CHECK
    )
    return annotation.pk


def _draw_index(seed: int, annotator_id: int, slot: int, size: int) -> int:
    digest = hashlib.sha256(f"pick:{seed}:{annotator_id}:{slot}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % size


def gold_makers(study: Study, user_ids: Iterable[int]) -> set[int]:
    """Which of these people may make gold verdicts in the study (admins and gold experts)."""
    return set(
        Membership.objects.filter(study=study, user_id__in=list(user_ids), role__in=GOLD_MAKERS).values_list(
            "user_id", flat=True
        )
    )
