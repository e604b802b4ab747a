"""What counts in the profile, Table 1, scoring and the release: one selection, used by all of them."""

from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Now

from annotation.models import Annotation, GoldItem, Participant, Withdrawal
from annotation.rules import workflow

# The states of an item waiting for its annotator: not submitted yet.
WAITING = (workflow.ASSIGNED, workflow.IN_PROGRESS, workflow.RETURNED)


def _withdrawn() -> Exists:
    """Whether the annotation's annotator withdrew from its study (annotation.services.withdrawal)."""
    return Exists(Withdrawal.objects.filter(study_id=OuterRef("caption__clip__study_id"),
                                            user_id=OuterRef("annotator_id")))


def _work(annotations):
    return annotations.filter(purpose=Annotation.Purpose.WORK).exclude(
        Exists(GoldItem.objects.filter(caption_id=OuterRef("caption_id")))
    )


def counted_annotations(annotations):
    """The annotations of a queryset that count in the profile, Table 1 and the release: the
    study's work (purpose ``work``) on captions that are not gold items, by annotators who have
    not withdrawn from the study."""
    return _work(annotations).exclude(_withdrawn())


def excluded_by_withdrawal(annotations):
    """The annotations of a queryset that would count but for their annotator's withdrawal:
    with :func:`counted_annotations`, they make the study's work of the queryset."""
    return _work(annotations).filter(_withdrawn())


def not_withdrawn(annotations):
    """The annotations of a queryset whose annotator has not withdrawn from its study: what QC
    reviews (annotation.selectors.queues.review_candidates)."""
    return annotations.exclude(_withdrawn())


def timed_out_participation(*, study, user):
    """The participation of `user` (a user or an expression of one) in `study` (likewise) if
    their time allowed ran out before they completed (annotation.services.recruitment): the one
    condition behind freeing their items, refusing their work and saves (services.consent,
    services.annotation_common)."""
    return Participant.objects.filter(study_id=study, user_id=user, completed_at__isnull=True,
                                      time_out_at__lte=Now())


def _timed_out() -> Exists:
    """Whether the annotation's annotator is a participant whose time allowed ran out."""
    return Exists(timed_out_participation(study=OuterRef("caption__clip__study_id"), user=OuterRef("annotator_id")))


def holding_annotations(annotations):
    """The annotations of a queryset that hold their caption when captions are given out: all
    but those of withdrawn people, whose waiting items went back to the pool, and the items not
    submitted of participants whose time ran out (their submitted work still holds its caption)."""
    return annotations.exclude(_withdrawn()).exclude(Q(state__in=WAITING) & _timed_out())


def approved_excluded_by_withdrawal(study) -> int:
    """How many approved annotations of the study's work a withdrawal keeps out of the profile,
    Table 1 and the release: the count each of them reports."""
    return excluded_by_withdrawal(
        Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED)).count()
