"""Withdrawal: an annotator leaves a study at any time. Their waiting items go back to the pool
(a new participant gets them), their work stops counting everywhere (counted, the profile, the
release, each export saying how many were left out, and an independent recount agreeing), on
request or by the study's setting their annotations' content is erased leaving an audit record
without content, twice is harmless, a closed study still honours it (erasure included, the
database letting only the erasure through), an archived one excludes but does not erase, and a
withdrawn person works no more, through any path."""

from __future__ import annotations

import csv
import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.errors import StudyStateRefused
from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    Participant,
    Study,
    WindowCorrection,
    Withdrawal,
)
from annotation.rules import workflow
from annotation.selectors.counted import (
    approved_excluded_by_withdrawal,
    counted_annotations,
    excluded_by_withdrawal,
)
from annotation.selectors.queues import review_queue
from annotation.services import recruitment
from annotation.services.annotation_common import NotAllowed
from annotation.services.lifecycle import study_archive, study_close
from annotation.services.studies import membership_grant, study_update
from annotation.services.withdrawal import participation_withdraw, withdrawals_list
from annotation.services.workflow import (
    annotation_start_next,
    annotations_assign,
    review_approve,
    review_claim,
    review_claim_next,
)
from scoring.erasure import rows_not_erased
from scoring.models import ScoreChunk, ScoreJob, ScoreResult
from scoring.profiles import final_annotations, profile_export
from scoring.release import release_build, release_rows
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip, save

pytestmark = pytest.mark.django_db

SECRET_TEXT = "The zebra-striped kettle whistles"
CLIPS = ("a", "b", "c", "d")


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def world(study, personas, make_user):
    """Study s1 running, four clips with one caption each. `leaver` has a, b approved (a with
    SECRET_TEXT), c in progress and d assigned; `stayer` (another annotator) has nothing."""
    leaver, stayer = make_user("leaver"), make_user("stayer")
    for person in (leaver, stayer):
        membership_grant(study=study, user=person, role="annotator")
    for clip in CLIPS:
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, "M-one") for clip in CLIPS])
    annotations_assign(study=study, annotators=[leaver])
    reviewer = personas["reviewer"]

    def item(clip):
        return Annotation.objects.get(caption__clip__name=clip, annotator=leaver)

    for clip in ("a", "b"):
        overview = {"verdict": "reject", "text": f"{SECRET_TEXT} on {clip}.", "modes": ["factual"]}
        complete(item(clip), leaver, overview=overview)
        review_claim(annotation_id=item(clip).pk, actor=reviewer)
        review_approve(annotation_id=item(clip).pk, actor=reviewer)
    opened = annotation_start_next(study=study, annotator=leaver)
    save(Annotation.objects.get(pk=opened), leaver, overview={"verdict": "reject", "text": SECRET_TEXT + " again",
                                                               "modes": ["factual"]})
    return {"study": study, "leaver": leaver, "stayer": stayer, "item": item, "people": personas}


def approved(study):
    return Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED)


# --------------------------------------------------------------------------- services


def test_withdrawing_releases_the_waiting_items_to_a_new_participant(world):
    study, leaver = world["study"], world["leaver"]
    link, _ = recruitment.recruitment_link_create(study=study, actor=world["people"]["admin"], cap=5, quota=4)
    with pytest.raises(recruitment.RecruitmentRefused, match="no work left"):
        recruitment.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24})
    withdrawal = participation_withdraw(study=study, user=leaver)
    assert withdrawal.released == 2  # c in progress, d assigned
    joined = recruitment.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})
    given = set(Annotation.objects.filter(annotator=joined.participant.user).values_list("caption__clip__name",
                                                                                          flat=True))
    # a and b are excluded work: free again too; everything the leaver held can be redone.
    assert given == set(CLIPS)


def test_the_admin_can_assign_the_released_items_to_another_annotator(world):
    study = world["study"]
    participation_withdraw(study=study, user=world["leaver"])
    report = annotations_assign(study=study, annotators=[world["stayer"]])
    assert report.created == 4


def test_withdrawn_work_is_excluded_from_counted_the_profile_and_the_release(world):
    study = world["study"]
    assert counted_annotations(approved(study)).count() == 2
    participation_withdraw(study=study, user=world["leaver"])
    assert counted_annotations(approved(study)).count() == 0
    assert excluded_by_withdrawal(approved(study)).count() == 2 == approved_excluded_by_withdrawal(study)
    assert final_annotations(study) == []
    assert release_rows(study) == ([], [])


def test_erasure_removes_the_content_and_leaves_an_audit_record_without_it(world):
    study, leaver = world["study"], world["leaver"]
    withdrawal = participation_withdraw(study=study, user=leaver, erase=True)
    assert withdrawal.erased_at is not None and withdrawal.erased == 4 and not withdrawal.erasing
    mine = Annotation.objects.filter(annotator=leaver)
    passes = CorrectionPass.objects.filter(annotation__in=mine)
    assert passes.exists()
    for correction in passes:
        assert (correction.overview_text, correction.overview_modes, correction.overview_verdict) == ("", [], "")
    assert not WindowCorrection.objects.filter(correction_pass__annotation__in=mine).exists()
    assert not AuditEvent.objects.filter(annotation__in=mine).exclude(before={"erased": True}).exists()
    everything = json.dumps([list(CorrectionPass.objects.values()), list(AuditEvent.objects.values("before", "after")),
                             list(Annotation.objects.values("return_comment", "returned_units", "ui_state", "undo"))],
                            default=str)
    assert SECRET_TEXT not in everything
    record = AuditEvent.objects.get(study=study, action="participant_erase")
    assert record.actor == leaver and record.after == {"person": "leaver", "annotations": 4}
    # The states stay: the audit trail still says who did what, when.
    assert sorted(mine.values_list("state", flat=True)) == ["approved", "approved", "assigned", "in_progress"]


def test_the_study_setting_erases_whatever_the_person_asks(world):
    study = world["study"]
    study_update(study=study, actor=world["people"]["admin"], changes={"erase_on_withdrawal": True})
    withdrawal = participation_withdraw(study=study, user=world["leaver"], erase=False)
    assert withdrawal.erase_requested and withdrawal.erased == 4


def test_withdrawing_twice_is_harmless_and_may_ask_the_erasure_later(world):
    study, leaver = world["study"], world["leaver"]
    first = participation_withdraw(study=study, user=leaver)
    again = participation_withdraw(study=study, user=leaver)
    assert again.pk == first.pk and again.erased_at is None
    assert AuditEvent.objects.filter(action="participant_withdraw").count() == 1
    erased = participation_withdraw(study=study, user=leaver, erase=True)
    assert erased.pk == first.pk and erased.erased == 4
    participation_withdraw(study=study, user=leaver, erase=True)
    assert AuditEvent.objects.filter(action="participant_erase").count() == 1
    assert Withdrawal.objects.count() == 1


def test_one_withdrawal_per_person_and_study_in_the_database(world):
    participation_withdraw(study=world["study"], user=world["leaver"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Withdrawal.objects.create(study=world["study"], user=world["leaver"], pseudonym="again")


def test_reading_a_withdrawal_does_not_join_the_study_table(world):
    participation_withdraw(study=world["study"], user=world["leaver"])
    with CaptureQueriesContext(connection) as queries:
        found = Withdrawal.objects.filter(study=world["study"], user=world["leaver"]).first()
    assert found is not None and len(queries) == 1
    sql = queries[0]["sql"]
    assert "JOIN" not in sql.upper() and Study._meta.db_table not in sql


def test_withdrawals_are_listed_by_when_they_happened(world):
    study = world["study"]
    first = participation_withdraw(study=study, user=world["leaver"])
    second = participation_withdraw(study=study, user=world["stayer"])
    # The later row happened first: time decides, not the order the rows were made in.
    Withdrawal.objects.filter(pk=second.pk).update(at=first.at - timedelta(minutes=5))
    assert [row.pseudonym for row in withdrawals_list(study=study)] == ["stayer", "leaver"]
    assert list(Withdrawal.objects.filter(study=study)) == [Withdrawal.objects.get(pk=second.pk), first]


def test_only_annotators_withdraw(world):
    with pytest.raises(NotAllowed, match="do not annotate in study Study one"):
        participation_withdraw(study=world["study"], user=world["people"]["reviewer"])
    assert not Withdrawal.objects.exists()


def test_a_withdrawn_annotator_works_no_more(world):
    study, leaver = world["study"], world["leaver"]
    in_progress = Annotation.objects.get(annotator=leaver, state=workflow.IN_PROGRESS)
    participation_withdraw(study=study, user=leaver)
    with pytest.raises(NotAllowed, match="You withdrew from study Study one"):
        annotation_start_next(study=study, annotator=leaver)
    with pytest.raises(NotAllowed, match="You withdrew from study Study one"):
        save(in_progress, leaver, overview={"verdict": "accept"})


def test_a_withdrawn_participant_cannot_join_again(world):
    study = world["study"]
    link, _ = recruitment.recruitment_link_create(study=study, actor=world["people"]["admin"], cap=5, quota=1)
    participation_withdraw(study=study, user=world["leaver"])  # frees items for the participant
    joined = recruitment.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24})
    withdrawal = participation_withdraw(study=study, user=joined.participant.user)
    assert withdrawal.pseudonym == joined.participant.pseudonym
    with pytest.raises(recruitment.RecruitmentRefused, match="cannot join it again") as refused:
        recruitment.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24})
    assert refused.value.kind == "withdrawn"
    assert Participant.objects.filter(study=study).count() == 1


def test_a_closed_study_still_honours_withdrawal_and_erasure(world):
    study, leaver = world["study"], world["leaver"]
    study_close(study=study, actor=world["people"]["admin"], confirm=True)
    withdrawal = participation_withdraw(study=study, user=leaver, erase=True)
    assert withdrawal.released == 0 and withdrawal.erased == 4
    assert approved_excluded_by_withdrawal(study) == 2
    assert not CorrectionPass.objects.filter(annotation__annotator=leaver).exclude(overview_text="").exists()


def _scores(study, leaver, stayer_caption):
    """Scores of the leaver's approved item on clip a (its verdict's, with its text in the
    detail, and clip a's leave-out set), one of clip c's imported references (not theirs), and
    a planned chunk holding their text beside another item."""
    mine = Annotation.objects.get(caption__clip__name="a", annotator=leaver)
    now = timezone.now()
    job = ScoreJob.objects.create(study=study, kind=ScoreJob.Kind.STUDY, metrics=["bleu"])

    def row(key, subject, caption, annotation=None, facts=SECRET_TEXT):
        return ScoreResult.objects.create(
            study=study, caption=caption, annotation=annotation, subject=subject, item_key=key, metric="llmfacts_f1",
            metric_version="1", value=0.5, detail={"facts": [facts]}, computed_at=now, job=job)

    row(f"annotation:{mine.pk}:overview", "overview", mine.caption, mine)
    row(f"caption:{mine.caption_id}:approved", "caption_vs_approved", mine.caption)
    kept = row(f"caption:{stayer_caption.pk}:references", "caption_vs_reference", stayer_caption,
               facts="the model's own")
    item = {"key": "x", "subject": "overview", "caption_id": mine.caption_id, "annotation_id": mine.pk,
            "candidate": "c", "references": [SECRET_TEXT], "clip_id": mine.caption.clip_id}
    other = dict(item, key="y", annotation_id=None, subject="caption_vs_reference", clip_id=stayer_caption.clip_id,
                 references=["a reference"])
    ScoreChunk.objects.create(job=job, index=0, family="llmfacts", group="overview", version="1",
                              items=[item, other], item_count=2)
    return kept


def test_erasure_removes_the_scores_of_the_erased_annotations(world):
    study, leaver = world["study"], world["leaver"]
    kept = _scores(study, leaver, Annotation.objects.get(caption__clip__name="c", annotator=leaver).caption)
    participation_withdraw(study=study, user=leaver, erase=True)
    assert list(ScoreResult.objects.filter(study=study)) == [kept]
    chunk = ScoreChunk.objects.get(job__study=study)
    assert [item["key"] for item in chunk.items] == ["y"]
    assert SECRET_TEXT not in json.dumps([list(ScoreResult.objects.values("detail")), chunk.items])


def test_withdrawal_without_erasure_keeps_the_scores(world):
    study, leaver = world["study"], world["leaver"]
    _scores(study, leaver, Annotation.objects.get(caption__clip__name="c", annotator=leaver).caption)
    participation_withdraw(study=study, user=leaver)
    assert ScoreResult.objects.filter(study=study).count() == 3


def test_a_closed_studys_scores_take_the_erasure_and_nothing_else(world):
    study, leaver = world["study"], world["leaver"]
    kept = _scores(study, leaver, Annotation.objects.get(caption__clip__name="c", annotator=leaver).caption)
    ScoreJob.objects.filter(study=study).update(status=ScoreJob.Status.DONE)
    study_close(study=study, actor=world["people"]["admin"], confirm=True)
    with pytest.raises(Exception, match="its rows do not change"), transaction.atomic():
        ScoreResult.objects.filter(pk=kept.pk).delete()
    participation_withdraw(study=study, user=leaver, erase=True)
    assert list(ScoreResult.objects.filter(study=study)) == [kept]


def test_rows_computed_before_an_erasure_are_not_stored_after_it(world):
    study, leaver = world["study"], world["leaver"]
    kept = _scores(study, leaver, Annotation.objects.get(caption__clip__name="c", annotator=leaver).caption)
    rows = list(ScoreResult.objects.filter(study=study))
    job = ScoreJob.objects.get(study=study)
    assert rows_not_erased(job, rows) == rows
    participation_withdraw(study=study, user=leaver, erase=True)
    assert rows_not_erased(job, rows) == [kept]


def _submitted(world):
    """The leaver's item c, submitted and past its undo window: waiting for QC."""
    item = world["item"]("c")
    complete(item, world["leaver"], overview={"verdict": "accept", "text": "", "modes": []})
    Annotation.objects.filter(pk=item.pk).update(undo_until=None)
    return item


def test_qc_reviews_no_withdrawn_persons_items(world):
    study, reviewer = world["study"], world["people"]["reviewer"]
    item = _submitted(world)
    assert [row["id"] for row in review_queue(study=study, reviewer=reviewer)["items"]] == [item.pk]
    participation_withdraw(study=study, user=world["leaver"])
    assert review_queue(study=study, reviewer=reviewer) == {
        "order": "risk", "count": 0, "count_capped": False, "items": [], "next": None}
    assert review_claim_next(study=study, actor=reviewer) is None
    with pytest.raises(NotAllowed, match=f"withdrew from study {study.name} .* QC does not review it"):
        review_claim(annotation_id=item.pk, actor=reviewer)
    assert Annotation.objects.get(pk=item.pk).state == workflow.SUBMITTED


def test_an_item_claimed_before_the_withdrawal_is_not_approved_after_it(world):
    study, reviewer = world["study"], world["people"]["reviewer"]
    item = _submitted(world)
    review_claim(annotation_id=item.pk, actor=reviewer)
    participation_withdraw(study=study, user=world["leaver"])
    with pytest.raises(NotAllowed, match="withdrew"):
        review_approve(annotation_id=item.pk, actor=reviewer)


def test_the_api_refuses_to_claim_a_withdrawn_persons_item_saying_why(world):
    study = world["study"]
    item = _submitted(world)
    participation_withdraw(study=study, user=world["leaver"])
    answer = api(world["people"]["reviewer"]).post(f"/api/annotations/{item.pk}/claim/", {}, format="json")
    assert answer.status_code == 403
    assert "withdrew from study" in answer.json()["detail"]


def test_outside_an_erasure_the_closed_study_and_the_audit_trail_stay_guarded(world):
    study = world["study"]
    study_close(study=study, actor=world["people"]["admin"], confirm=True)
    participation_withdraw(study=study, user=world["leaver"])
    with pytest.raises(Exception, match="its rows do not change"), transaction.atomic():
        CorrectionPass.objects.filter(annotation__annotator=world["leaver"]).update(overview_text="changed")
    with pytest.raises(Exception, match="audit events are never changed"), transaction.atomic():
        AuditEvent.objects.filter(annotation__annotator=world["leaver"]).update(before={"erased": True},
                                                                                after={"erased": True})


def test_an_archived_study_excludes_but_does_not_erase(world):
    study, leaver, admin = world["study"], world["leaver"], world["people"]["admin"]
    study_close(study=study, actor=admin, confirm=True)
    study_archive(study=study, actor=admin)
    with pytest.raises(StudyStateRefused, match="archived"):
        participation_withdraw(study=study, user=leaver, erase=True)
    assert not Withdrawal.objects.exists()
    withdrawal = participation_withdraw(study=study, user=leaver)
    assert withdrawal.erased_at is None and approved_excluded_by_withdrawal(study) == 2


def test_the_members_list_counts_each_withdrawals_excluded_work(world):
    participation_withdraw(study=world["study"], user=world["leaver"], erase=True)
    [row] = withdrawals_list(study=world["study"])
    assert (row.pseudonym, row.released, row.excluded, row.erased) == ("leaver", 2, 2, 4)


# --------------------------------------------------------------------------- exports agree


def test_the_profiles_formats_and_an_independent_recount_agree_on_the_exclusion(world, make_user, tmp_path):
    study = world["study"]
    # The stayer's approved work on a fifth clip keeps the profile computable.
    fake_clip(study, "e")
    captions_add(study, [caption_record("e", "M-one")])
    annotations_assign(study=study, annotators=[world["stayer"]])
    kept = Annotation.objects.get(annotator=world["stayer"], caption__clip__name="e")
    complete(kept, world["stayer"])
    review_claim(annotation_id=kept.pk, actor=world["people"]["reviewer"])
    review_approve(annotation_id=kept.pk, actor=world["people"]["reviewer"])
    participation_withdraw(study=study, user=world["leaver"])

    manifest = profile_export(study=study, out_dir=tmp_path, resamples=20, adjusted_resamples=10)
    # An independent recount in SQL: approved work of people who did not withdraw, and of those who did.
    with connection.cursor() as cursor:
        cursor.execute("""SELECT COUNT(DISTINCT a.caption_id) FILTER (WHERE w.id IS NULL), COUNT(*) FILTER
            (WHERE w.id IS NOT NULL) FROM annotation_annotation a JOIN annotation_caption c ON c.id = a.caption_id
            JOIN annotation_clip k ON k.id = c.clip_id LEFT JOIN annotation_withdrawal w ON w.study_id = k.study_id
            AND w.user_id = a.annotator_id WHERE k.study_id = %s AND a.state = 'approved' AND a.purpose = 'work'""",
                       [study.pk])
        counted, excluded = cursor.fetchone()
    assert (counted, excluded) == (1, 2)
    assert manifest["excluded_by_withdrawal"] == excluded
    assert manifest["parameters"]["approved annotations excluded by withdrawal"] == excluded
    for entry in manifest["tables"]:
        assert entry["excluded_by_withdrawal"] == excluded
        document = json.loads((tmp_path / entry["json"]).read_text(encoding="utf-8"))
        assert document["excluded_by_withdrawal"] == excluded
    with open(tmp_path / "tidy" / "captions.csv", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == counted
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "approved annotations excluded by withdrawal" in report
    assert "Withdrawals: 2 approved annotations of people who withdrew" in report
    assert SECRET_TEXT not in report

    out = tmp_path / "release"
    release = release_build(study=study, out_dir=out, license="CC-BY-4.0")
    assert release["counts"]["excluded_by_withdrawal"] == excluded and release["counts"]["captions"] == counted
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "excluded_by_withdrawal: 2" in card and "2 approved annotations of annotators who withdrew" in card
    with open(out / "captions.jsonl", encoding="utf-8") as handle:
        assert len(handle.readlines()) == counted


# --------------------------------------------------------------------------- API


def test_the_api_withdraws_once_and_says_so(world):
    study, client = world["study"], api(world["leaver"])
    before = client.get(f"/api/studies/{study.slug}/withdraw/")
    assert before.status_code == 200 and before.json()["withdrawn"] is False and before.json()["may_withdraw"]
    answers = [client.post(f"/api/studies/{study.slug}/withdraw/", {"erase": True}, format="json") for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json()["at"] == answers[1].json()["at"] and answers[1].json()["erased"] == 4
    assert client.post(f"/api/studies/{study.slug}/my-queue/next/").status_code == 403
    rows = api(world["people"]["admin"]).get(f"/api/studies/{study.slug}/withdrawals/").json()
    assert [(r["pseudonym"], r["excluded"], r["erased"]) for r in rows] == [("leaver", 2, 4)]


def test_the_api_refuses_bad_input_and_non_annotators(world):
    study = world["study"]
    bad = api(world["leaver"]).post(f"/api/studies/{study.slug}/withdraw/", {"erase": "perhaps"}, format="json")
    assert bad.status_code == 400 and "erase" in bad.json()
    refused = api(world["people"]["reviewer"]).post(f"/api/studies/{study.slug}/withdraw/", {}, format="json")
    assert refused.status_code == 403 and "do not annotate" in refused.json()["detail"]
    assert api(world["people"]["reviewer"]).get(f"/api/studies/{study.slug}/withdrawals/").status_code == 403
    assert not Withdrawal.objects.exists()


def test_an_archived_study_answers_409_to_an_erasure(world):
    study, admin = world["study"], world["people"]["admin"]
    study_close(study=study, actor=admin, confirm=True)
    study_archive(study=study, actor=admin)
    answer = api(world["leaver"]).post(f"/api/studies/{study.slug}/withdraw/", {"erase": True}, format="json")
    assert answer.status_code == 409 and "archived" in answer.json()["detail"]


# --------------------------------------------------------------------------- pages


def test_the_page_needs_the_confirmation_and_a_double_post_withdraws_once(world, client):
    study = world["study"]
    client.force_login(world["leaver"])
    page = client.get(f"/studies/{study.slug}/withdraw/")
    assert page.status_code == 200 and b'id="withdraw-form"' in page.content
    unconfirmed = client.post(f"/studies/{study.slug}/withdraw/", {"erase": "yes"})
    assert unconfirmed.status_code == 400 and not Withdrawal.objects.exists()
    for _ in range(2):
        done = client.post(f"/studies/{study.slug}/withdraw/", {"confirm": "yes"})
        assert done.status_code == 302 and done["Location"] == f"/studies/{study.slug}/withdraw/"
    assert Withdrawal.objects.count() == 1
    assert client.get(f"/studies/{study.slug}/queue/")["Location"] == f"/studies/{study.slug}/withdraw/"
    item = Annotation.objects.get(annotator=world["leaver"], state=workflow.IN_PROGRESS)
    assert client.get(f"/annotate/{item.pk}/")["Location"] == f"/studies/{study.slug}/withdraw/"
    shown = client.get(f"/studies/{study.slug}/withdraw/")
    assert b"You withdrew from study Study one" in shown.content and b'id="erase-form"' in shown.content


def test_the_members_page_shows_withdrawals_escaped(world, client, make_user):
    study = world["study"]
    sly = make_user('<b>sly</b>')
    membership_grant(study=study, user=sly, role="annotator")
    participation_withdraw(study=study, user=sly)
    client.force_login(world["people"]["admin"])
    page = client.get(f"/studies/{study.slug}/members/").content.decode()
    assert 'id="withdrawals"' in page and "&lt;b&gt;sly&lt;/b&gt;" in page and "<b>sly</b>" not in page


def test_the_history_page_tells_the_withdrawal_and_the_erasure(world, client):
    participation_withdraw(study=world["study"], user=world["leaver"], erase=True)
    client.force_login(world["people"]["admin"])
    page = client.get(f"/studies/{world['study'].slug}/history/").content.decode()
    assert "leaver withdrew; 2 waiting item(s) went back to the pool, erasure asked." in page
    assert "The content of leaver&#x27;s 4 annotation(s) was erased." in page


def test_the_erase_setting_is_a_study_setting_of_the_api(world):
    client = api(world["people"]["admin"])
    answer = client.patch(f"/api/studies/{world['study'].slug}/", {"erase_on_withdrawal": True}, format="json")
    assert answer.status_code == 200 and answer.json()["erase_on_withdrawal"] is True
    bad = client.patch(f"/api/studies/{world['study'].slug}/", {"erase_on_withdrawal": "soon"}, format="json")
    assert bad.status_code == 400 and "erase_on_withdrawal" in bad.json()
