"""A study's lifecycle: setup -> running -> closed -> archived, enforced by the services, the API
and the database (migration 0016), and audited. Runs on SQLite and on PostgreSQL."""

import importlib

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from annotation.errors import ServiceError, StudyStateRefused
from annotation.models import AuditEvent, Study
from annotation.services.lifecycle import (
    FROZEN_FIELDS,
    NeedsConfirmation,
    NotReady,
    StartNeedsConfirmation,
    readiness,
    study_archive,
    study_close,
    study_require_setup,
    study_start,
)
from annotation.services.studies import membership_grant
from annotation.services.taxonomy import taxonomy_default
from annotation.services.workflow import (
    annotation_open,
    annotation_save,
    annotation_start_next,
    annotations_assign,
    review_approve,
    review_claim,
    review_claim_next,
)
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def crew(make_user):
    return {role: make_user(f"lab-{role}") for role in ("admin", "annotator", "reviewer", "researcher")}


@pytest.fixture
def setup_study(crew):
    """A study in setup with one admin and nothing else."""
    study = Study.objects.create(slug="lab", name="Lab study", taxonomy=taxonomy_default(), state="setup")
    membership_grant(study=study, user=crew["admin"], role="admin")
    return study


def make_ready(study, crew):
    for role in ("annotator", "reviewer", "researcher"):
        membership_grant(study=study, user=crew[role], role=role)
    fake_clip(study, "c1")
    captions_add(study, [caption_record("c1")])
    annotations_assign(study=study, annotators=[crew["annotator"]], design="clip_blocks", actor=crew["admin"])


@pytest.fixture
def running(setup_study, crew):
    make_ready(setup_study, crew)
    return study_start(study=setup_study, actor=crew["admin"])


# --------------------------------------------------------------------------- setup and start


def test_the_migration_freezes_the_columns_the_service_names():
    migration = importlib.import_module("annotation.migrations.0018_life_study_lifecycle")
    columns = {Study._meta.get_field(name).column for name in FROZEN_FIELDS}
    assert set(migration.FROZEN_COLUMNS) == columns


def test_starting_with_no_members_says_what_is_missing(setup_study, crew):
    with pytest.raises(NotReady) as refusal:
        study_start(study=setup_study, actor=crew["admin"])
    message = str(refusal.value)
    for missing in ("no clips imported", "no captions imported", "no member is an annotator",
                    "no member is a QC reviewer", "no member is a researcher",
                    "no caption is assigned to an annotator"):
        assert missing in message
    assert "study admin" not in message  # the admin is there
    setup_study.refresh_from_db()
    assert setup_study.state == "setup"


def test_the_api_refuses_a_start_listing_the_missing_items(setup_study, crew):
    answer = client_for(crew["admin"]).post(f"/api/studies/{setup_study.slug}/start/")
    assert answer.status_code == 400
    missing = {item["key"] for item in answer.json()["missing"]}
    assert missing == {"clips", "captions", "members_annotator", "members_reviewer", "members_researcher",
                       "assignment"}
    assert "no member is an annotator" in answer.json()["detail"]


def test_readiness_is_four_queries_whatever_the_size(setup_study, crew, django_assert_num_queries):
    make_ready(setup_study, crew)
    with django_assert_num_queries(4):
        items = readiness(setup_study)
    assert all(item.done for item in items)


def test_a_ready_study_starts_and_the_move_is_audited(setup_study, crew):
    make_ready(setup_study, crew)
    answer = client_for(crew["admin"]).post(f"/api/studies/{setup_study.slug}/start/")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["state"] == "running" and answer.json()["next"] == ["close"]
    event = AuditEvent.objects.get(study=setup_study, action="study_start")
    assert (event.actor, event.before, event.after) == (crew["admin"], {"state": "setup"}, {"state": "running"})


def test_only_study_admins_move_a_study(running, crew):
    for role in ("annotator", "reviewer", "researcher"):
        answer = client_for(crew[role]).post(f"/api/studies/{running.slug}/close/", {"confirm": True},
                                             format="json")
        assert answer.status_code == 403
    with pytest.raises(ServiceError, match="Only the study's admins"):
        study_close(study=running, actor=crew["researcher"], confirm=True)
    running.refresh_from_db()
    assert running.state == "running"


def test_annotators_and_reviewers_see_nothing_of_a_study_in_setup(setup_study, crew, client):
    make_ready(setup_study, crew)
    annotator = crew["annotator"]
    item = setup_study.clips.get().captions.get().annotations.get()
    with pytest.raises(StudyStateRefused, match="being set up"):
        annotation_start_next(study=setup_study, annotator=annotator)
    with pytest.raises(StudyStateRefused, match="being set up"):
        annotation_open(annotation=item, actor=annotator)
    api = client_for(annotator)
    queue = api.get(f"/api/studies/{setup_study.slug}/my-queue/").json()
    assert queue["items"] == [] and queue["total"] == 0
    started = api.post(f"/api/studies/{setup_study.slug}/my-queue/next/")
    assert started.status_code == 409 and "being set up" in started.json()["detail"]
    assert api.get(f"/api/annotations/{item.pk}/").status_code == 404
    assert client_for(crew["reviewer"]).get(f"/api/annotations/{item.pk}/").status_code == 404
    client.force_login(annotator)
    assert client.get(f"/annotate/{item.pk}/").status_code == 404
    page = client.get(f"/studies/{setup_study.slug}/queue/")
    assert page.status_code == 200 and "being set up" in page.content.decode()


# --------------------------------------------------------------------------- running: frozen settings


def test_a_running_study_refuses_new_thresholds_in_the_service(running):
    with pytest.raises(StudyStateRefused, match="word thresholds is frozen"):
        study_require_setup(running, ["word_thresholds", "name"])
    study_require_setup(running, ["name", "description", "undo_seconds"])  # not frozen


@pytest.mark.parametrize("change", [
    {"near_total_cut": 0.4}, {"word_thresholds": [1, 2]}, {"length_band": 0.1},
    {"assignment_design": "spread"}, {"spread_gap": 9}, {"caption_language": "zh"},
])
def test_the_database_refuses_a_running_study_new_settings(running, change):
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=running.pk).update(**change)


def test_the_database_lets_a_study_in_setup_change_its_settings(setup_study):
    Study.objects.filter(pk=setup_study.pk).update(near_total_cut=0.4, word_thresholds=[2, 4])
    setup_study.refresh_from_db()
    assert setup_study.near_total_cut == 0.4


def test_a_running_study_still_takes_a_new_name_and_undo_seconds(running):
    Study.objects.filter(pk=running.pk).update(name="Renamed", undo_seconds=20, description="x")
    running.refresh_from_db()
    assert running.name == "Renamed"


@pytest.mark.parametrize("undo_seconds", [3601, 32000])
def test_the_database_refuses_an_undo_time_over_an_hour(running, undo_seconds):
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=running.pk).update(undo_seconds=undo_seconds)
    Study.objects.filter(pk=running.pk).update(undo_seconds=3600)


@pytest.mark.parametrize("source,target", [("running", "setup"), ("running", "archived"), ("setup", "closed")])
def test_the_database_refuses_moves_out_of_order(setup_study, crew, source, target):
    if source == "running":
        Study.objects.filter(pk=setup_study.pk).update(state="running")
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=setup_study.pk).update(state=target)


def test_a_running_study_refuses_another_assignment_design_but_takes_new_captions(running, crew):
    with pytest.raises(StudyStateRefused, match="assignment design is frozen"):
        annotations_assign(study=running, annotators=[crew["annotator"]], design="spread")
    fake_clip(running, "c2")
    captions_add(running, [caption_record("c2")])
    report = annotations_assign(study=running, annotators=[crew["annotator"]])
    assert report.created == 1


def test_the_api_answers_what_the_study_can_do_next(running, crew):
    status = client_for(crew["admin"]).get(f"/api/studies/{running.slug}/lifecycle/").json()
    assert status["state"] == "running" and status["next"] == ["close"]
    assert status["unfinished"]["assigned"] == 1
    assert client_for(crew["annotator"]).get(f"/api/studies/{running.slug}/lifecycle/").status_code == 403


# --------------------------------------------------------------------------- closing


@pytest.fixture
def closed_with_work(running, crew, django_capture_on_commit_callbacks):
    """Closed while one annotation is submitted and claimed by the reviewer."""
    item = running.clips.get().captions.get().annotations.get()
    complete(item, crew["annotator"])
    item = review_claim(annotation_id=item.pk, actor=crew["reviewer"])
    with django_capture_on_commit_callbacks(execute=True):
        study_close(study=running, actor=crew["admin"], confirm=True)
    return running, item


def test_closing_asks_for_confirmation_showing_what_is_unfinished(running, crew):
    item = running.clips.get().captions.get().annotations.get()
    annotation_open(annotation=item, actor=crew["annotator"])
    with pytest.raises(NeedsConfirmation) as refusal:
        study_close(study=running, actor=crew["admin"])
    assert refusal.value.unfinished["in_progress"] == 1
    assert "1 in progress" in str(refusal.value)
    answer = client_for(crew["admin"]).post(f"/api/studies/{running.slug}/close/", {}, format="json")
    assert answer.status_code == 400 and answer.json()["unfinished"]["in_progress"] == 1
    running.refresh_from_db()
    assert running.state == "running"
    answer = client_for(crew["admin"]).post(f"/api/studies/{running.slug}/close/", {"confirm": True},
                                            format="json")
    assert answer.status_code == 200 and answer.json()["state"] == "closed"
    event = AuditEvent.objects.get(study=running, action="study_close")
    assert event.after["state"] == "closed" and event.after["unfinished"]["in_progress"] == 1


def test_a_closed_study_refuses_every_annotation_service(closed_with_work, crew):
    study, item = closed_with_work
    annotator = crew["annotator"]
    with pytest.raises(StudyStateRefused, match="is closed: it can be read, exported, released and archived"):
        annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version,
                        changes={"ui_state": {"unit": 1}})
    with pytest.raises(StudyStateRefused):
        annotation_start_next(study=study, annotator=annotator)
    answer = client_for(annotator).patch(f"/api/annotations/{item.pk}/draft/", {
        "base_version": item.version, "changes": {"ui_state": {}}}, format="json")
    assert answer.status_code == 409 and "nothing in it changes" in answer.json()["detail"]


def test_a_closed_study_refuses_every_review_service(closed_with_work, crew, make_user):
    study, item = closed_with_work
    reviewer = crew["reviewer"]
    with pytest.raises(StudyStateRefused):
        review_approve(annotation_id=item.pk, actor=reviewer)
    with pytest.raises(StudyStateRefused):
        review_claim_next(study=study, actor=reviewer)
    api = client_for(reviewer)
    for action in ("approve", "release", "claim"):
        answer = api.post(f"/api/annotations/{item.pk}/{action}/", {}, format="json")
        assert answer.status_code == 409 and "closed" in answer.json()["detail"], action
    assert api.post(f"/api/studies/{study.slug}/review-queue/next/", {}, format="json").status_code == 409
    with pytest.raises(StudyStateRefused, match="is closed"):
        annotations_assign(study=study, annotators=[crew["annotator"]])


def test_a_closed_study_can_still_be_read(closed_with_work, crew):
    study, item = closed_with_work
    answer = client_for(crew["annotator"]).get(f"/api/annotations/{item.pk}/")
    assert answer.status_code == 200 and answer.json()["read_only"] is True


def test_closing_builds_the_final_profile(closed_with_work):
    from scoring.profile_jobs import profile_jobs

    study, _ = closed_with_work
    jobs = profile_jobs(study=study)
    assert len(jobs) == 1 and jobs[0]["final"] is True and jobs[0]["requested_by"] == "lab-admin"
    # Nothing was approved: the job ran and said why it could not build a profile.
    assert jobs[0]["state"] in ("done", "failed")


# --------------------------------------------------------------------------- archiving


def test_an_archived_study_is_hidden_from_lists_but_exportable(closed_with_work, crew, client):
    from annotation.services.bundles import bundle_export

    study, _ = closed_with_work
    with pytest.raises(ServiceError, match="is closed: only a study setting up can be started"):
        study_start(study=study, actor=crew["admin"])
    study_archive(study=study, actor=crew["admin"])
    assert AuditEvent.objects.filter(study=study, action="study_archive").count() == 1
    api = client_for(crew["admin"])
    assert [s["slug"] for s in api.get("/api/studies/").json()["results"]] == []
    assert [s["slug"] for s in api.get("/api/studies/?archived=1").json()["results"]] == ["lab"]
    client.force_login(crew["admin"])
    assert "Lab study" not in client.get("/").content.decode()
    assert client.get(f"/studies/{study.slug}/").status_code == 200
    assert bundle_export(study=study)["study"]["slug"] == "lab"
    again = api.post(f"/api/studies/{study.slug}/archive/")
    assert again.status_code == 409


def test_the_study_triggers_survive_a_restore_after_a_sqlite_rebuild(running):
    from django.apps import apps
    from django.db import connection

    from annotation.migrations._sqlite_triggers import restore_study_triggers

    class Editor:  # what a migration's RunPython gets, inside this test's transaction
        def __init__(self):
            self.connection = connection

        def execute(self, sql, params=()):
            with connection.cursor() as cursor:
                cursor.execute(sql, params)

    restore_study_triggers(apps, Editor())  # what a later migration rebuilding the table calls
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=running.pk).update(near_total_cut=0.3)
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=running.pk).update(state="setup")


def test_the_admin_site_shows_a_running_studys_frozen_settings_without_offering_them(running, admin_client):
    page = admin_client.get(f"/admin/annotation/study/{running.pk}/change/").content.decode()
    assert 'name="near_total_cut"' not in page and 'name="state"' not in page
    assert 'name="name"' in page


# --------------------------------------------------------------------------- unassigned captions


def half_assigned(study, crew):
    """Issue 27's case: one annotator, two models of two clips, one model per clip: 2 of 4."""
    for role in ("annotator", "reviewer", "researcher"):
        membership_grant(study=study, user=crew[role], role=role)
    for name in ("c1", "c2"):
        fake_clip(study, name)
    captions_add(study, [caption_record(name, model) for name in ("c1", "c2") for model in ("m1", "m2")])
    annotations_assign(study=study, annotators=[crew["annotator"]], design="one_model_per_clip", actor=crew["admin"])


def test_the_checklist_counts_captions_with_no_annotator_and_says_why(setup_study, crew):
    half_assigned(setup_study, crew)
    item = {entry.key: entry for entry in readiness(setup_study)}["unassigned"]
    assert not item.done and not item.blocking
    assert item.detail.startswith("2 of 4 captions have no annotator: too few annotators for the "
                                  "one-model-per-clip design")
    assert "a clip has up to 2 captions, the study has 1 annotator." in item.detail


def test_starting_with_unassigned_captions_asks_for_confirmation(setup_study, crew):
    half_assigned(setup_study, crew)
    with pytest.raises(StartNeedsConfirmation, match="2 of 4 captions have no annotator"):
        study_start(study=setup_study, actor=crew["admin"])
    assert Study.objects.get(pk=setup_study.pk).state == "setup"
    api = client_for(crew["admin"])
    asked = api.post(f"/api/studies/{setup_study.slug}/start/", {}, format="json")
    assert asked.status_code == 400
    assert asked.json()["confirm"]["key"] == "unassigned" and "Confirm to start anyway" in asked.json()["detail"]
    assert Study.objects.get(pk=setup_study.pk).state == "setup"
    started = api.post(f"/api/studies/{setup_study.slug}/start/", {"confirm": True}, format="json")
    assert started.status_code == 200 and started.json()["state"] == "running"


def test_a_fully_assigned_study_starts_without_asking(setup_study, crew):
    make_ready(setup_study, crew)
    item = {entry.key: entry for entry in readiness(setup_study)}["unassigned"]
    assert item.done and item.detail == "every caption has an annotator"
    assert study_start(study=setup_study, actor=crew["admin"]).state == "running"


def test_closing_counts_the_captions_with_no_annotator(setup_study, crew):
    half_assigned(setup_study, crew)
    study_start(study=setup_study, actor=crew["admin"], confirm=True)
    with pytest.raises(NeedsConfirmation, match="2 captions with no annotator") as refusal:
        study_close(study=setup_study, actor=crew["admin"])
    assert refusal.value.unfinished["unassigned"] == 2 and refusal.value.unfinished["assigned"] == 2
    answer = client_for(crew["admin"]).post(f"/api/studies/{setup_study.slug}/close/", {}, format="json")
    assert answer.status_code == 400 and answer.json()["unfinished"]["unassigned"] == 2
