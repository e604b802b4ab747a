"""Creating a study and changing its settings, through the services and the REST API; who may
create; a site admin sees every study and reads any of them until they add themselves a role.

These run on SQLite and, with DATABASE_URL, on PostgreSQL (`make test`)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from annotation.errors import FieldErrors
from annotation.models import AuditEvent, Membership, Study, StudyState
from annotation.routes import study_route_words
from annotation.rules.study_settings import slug_suggest
from annotation.services.studies import study_create, study_update
from annotation.services.taxonomy import taxonomy_create_version, taxonomy_default

pytestmark = pytest.mark.django_db

VALID = {
    "name": "Walk study", "slug": "walk-study", "description": "Watch each clip to the end.",
    "word_thresholds": [1, 3, 6, 16], "near_total_cut": 0.55, "length_band": 0.05,
    "assignment_design": "spread", "spread_gap": 4, "overlap_share": 0.2, "undo_seconds": 15,
    "caption_language": "zh",
}


@pytest.fixture
def creator(make_user):
    person = make_user("lab-admin")
    person.user_permissions.add(Permission.objects.get(codename="add_study", content_type__app_label="annotation"))
    return person


@pytest.fixture
def site_admin(make_user):
    return make_user("site-admin", is_staff=True)


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def create(user, **changes):
    return api(user).post("/api/studies/", {**VALID, **changes}, format="json")


# --------------------------------------------------------------------------- create


def test_a_study_created_through_the_api_has_every_setting_starts_in_setup_and_its_creator_is_admin(creator):
    response = create(creator, taxonomy=taxonomy_default().pk)
    assert response.status_code == 201, response.json()
    study = Study.objects.get(slug="walk-study")
    assert (study.name, study.description, study.word_thresholds, study.near_total_cut, study.length_band) == (
        "Walk study", "Watch each clip to the end.", [1, 3, 6, 16], 0.55, 0.05)
    assert (study.assignment_design, study.spread_gap, study.overlap_share, study.undo_seconds,
            study.caption_language, study.state) == ("spread", 4, 0.2, 15, "zh", StudyState.SETUP)
    assert list(Membership.objects.filter(study=study).values_list("user__username", "role")) == [
        ("lab-admin", "admin")]
    assert response.json()["roles"] == ["admin"] and response.json()["state"] == "setup"
    actions = list(AuditEvent.objects.filter(study=study).values_list("action", flat=True))
    assert actions == ["study_create", "member_add"]


def test_the_creator_opens_the_new_study_at_once(creator):
    create(creator)
    client = api(creator)
    assert client.get("/api/studies/walk-study/").status_code == 200
    assert [s["slug"] for s in client.get("/api/studies/").json()["results"]] == ["walk-study"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("name", "", "Give the study a name"),
    ("name", "x" * 201, "the limit is 200"),
    ("slug", "Walk_Study", "lowercase letters, digits and single hyphens"),
    ("slug", "a", "2 to 60 characters"),
    ("slug", "new", "the name of a page"),
    ("slug", "-walk", "single hyphens"),
    ("word_thresholds", [1, 6, 3], "must ascend"),
    ("word_thresholds", [1, 3, 3], "must ascend"),
    ("word_thresholds", [], "at least one word threshold"),
    ("word_thresholds", [0, 3], "from 1 to 1,000 words"),
    ("word_thresholds", [1, 2, 3, 4, 5, 6, 7, 8, 9], "At most 8"),
    ("word_thresholds", ["a"], "valid integer"),
    ("near_total_cut", 1, "must lie in (0, 1)"),
    ("near_total_cut", 0, "must lie in (0, 1)"),
    ("near_total_cut", "x", "valid number"),
    ("length_band", 0.6, "must lie in [0, 0.5]"),
    ("length_band", -0.01, "must lie in [0, 0.5]"),
    ("overlap_share", 1.5, "must lie in [0, 1]"),
    ("spread_gap", -1, "from 0 to 1,000"),
    ("undo_seconds", 4000, "from 0 to 3,600"),
    ("assignment_design", "random", "not a valid choice"),
    ("caption_language", "klingon", "not a valid choice"),
    ("taxonomy", 99999, "no taxonomy version 99999"),
    ("description", "x" * 5001, "the limit is 5,000"),
    ("description", "a\x00b", "NUL"),
])
def test_every_invalid_field_is_refused_naming_it_and_nothing_is_created(creator, field, value, message):
    response = create(creator, **{field: value})
    assert response.status_code == 400, response.json()
    body = response.json()
    assert field in body["detail"] and message in body["detail"], body
    assert not Study.objects.filter(slug=VALID["slug"] if field != "slug" else value).exists()
    assert not Study.objects.filter(name="Walk study").exists()
    assert not AuditEvent.objects.filter(action="study_create").exists()


def test_a_slug_in_use_is_refused_and_the_slug_check_says_so(creator):
    assert create(creator).status_code == 201
    again = create(creator, name="Another")
    assert again.status_code == 400 and "already exists" in again.json()["slug"][0]
    check = api(creator).get("/api/studies/slug-check/", {"slug": "walk-study"}).json()
    assert check == {"slug": "walk-study", "available": False,
                     "problem": "A study with slug 'walk-study' already exists; choose another."}
    suggested = api(creator).get("/api/studies/slug-check/", {"name": "Café Walk 2"}).json()
    assert suggested == {"slug": "cafe-walk-2", "available": True, "problem": None}


def test_every_word_routed_under_studies_is_refused_as_a_slug_at_the_field(creator, client):
    """Issue 27: a study called slug-check answered the slug-check view instead of its own."""
    words = study_route_words()
    assert {"new", "slug-check"} <= words  # read from the URL configuration, not a hand list
    for word in sorted(words):
        response = create(creator, slug=word)
        assert response.status_code == 400, (word, response.json())
        assert "is the name of a page" in response.json()["slug"][0] and "slug" in response.json()["detail"]
        check = api(creator).get("/api/studies/slug-check/", {"slug": word}).json()
        assert check["available"] is False and "name of a page" in check["problem"]
    assert not Study.objects.filter(slug__in=words).exists()
    client.force_login(creator)
    page = client.get("/studies/new/").content.decode()
    limits = json.loads(page.split('id="study-form-data" type="application/json">')[1].split("</script>")[0])
    assert set(limits["limits"]["reserved_slugs"]) == words


def test_slugs_are_suggested_from_names():
    assert slug_suggest("Walk study: Café 2026!") == "walk-study-cafe-2026"
    assert slug_suggest("x" * 70 + " y")[-1] != "-" and len(slug_suggest("x" * 70)) == 60


def test_a_refused_value_creates_nothing_neither_study_nor_membership_nor_history(creator):
    with pytest.raises(FieldErrors):
        study_create(slug="half", name="Half", word_thresholds=[3, 1], created_by=creator)
    assert not Study.objects.filter(slug="half").exists()
    assert not Membership.objects.filter(user=creator).exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize("who", ["plain", "anonymous"])
def test_people_without_the_permission_cannot_create_studies(make_user, who):
    client = APIClient()
    if who == "plain":
        client.force_authenticate(make_user("plain"))
    response = client.post("/api/studies/", VALID, format="json")
    assert response.status_code in (401, 403)
    assert not Study.objects.filter(slug="walk-study").exists()


def test_site_admins_create_studies_without_the_permission(site_admin):
    assert create(site_admin).status_code == 201
    assert Membership.objects.filter(study__slug="walk-study", user=site_admin, role="admin").exists()


def test_a_taxonomy_version_is_picked_from_the_list_with_its_definitions(creator):
    other = taxonomy_create_version(name="lab", modes=[
        {"key": "factual", "name": "Factual", "definition": "Wrong facts.", "decision_test": "Is it false?",
         "level": "unit"}])
    listed = api(creator).get("/api/taxonomies/").json()
    assert {t["id"] for t in listed} >= {other.pk, taxonomy_default().pk}
    lab = next(t for t in listed if t["id"] == other.pk)
    assert lab["modes"][0]["definition"] == "Wrong facts." and lab["frozen"] is False
    assert create(creator, taxonomy=other.pk).status_code == 201
    assert Study.objects.get(slug="walk-study").taxonomy == other


# --------------------------------------------------------------------------- settings


def test_settings_are_changed_by_patch_and_each_change_is_audited(creator):
    create(creator)
    response = api(creator).patch("/api/studies/walk-study/", {"near_total_cut": 0.5, "word_thresholds": [1, 5]},
                                  format="json")
    assert response.status_code == 200, response.json()
    study = Study.objects.get(slug="walk-study")
    assert (study.near_total_cut, study.word_thresholds) == (0.5, [1, 5])
    event = AuditEvent.objects.get(study=study, action="study_update")
    assert event.actor == creator
    assert event.before == {"near_total_cut": 0.55, "word_thresholds": [1, 3, 6, 16]}
    assert event.after == {"near_total_cut": 0.5, "word_thresholds": [1, 5]}


def test_a_settings_change_with_one_bad_field_changes_nothing(creator):
    create(creator)
    response = api(creator).patch("/api/studies/walk-study/", {"near_total_cut": 0.5, "length_band": 2},
                                  format="json")
    assert response.status_code == 400 and "length_band" in response.json()
    assert Study.objects.get(slug="walk-study").near_total_cut == 0.55
    assert not AuditEvent.objects.filter(action="study_update").exists()


def test_the_slug_cannot_change_and_unknown_settings_are_refused(study, personas):
    with pytest.raises(FieldErrors, match="slug"):
        study_update(study=study, actor=personas["admin"], changes={"slug": "other"})
    with pytest.raises(FieldErrors, match="not a study setting"):
        study_update(study=study, actor=personas["admin"], changes={"state": "closed"})


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "researcher"])
def test_only_study_admins_change_settings(study, personas, persona):
    response = api(personas[persona]).patch("/api/studies/s1/", {"near_total_cut": 0.5}, format="json")
    assert response.status_code == 403
    assert Study.objects.get(pk=study.pk).near_total_cut == 0.55


def test_an_unchanged_setting_writes_no_history(study, personas):
    study_update(study=study, actor=personas["admin"], changes={"near_total_cut": 0.55})
    assert not AuditEvent.objects.filter(action="study_update").exists()


# --------------------------------------------------------------------------- site admins


def test_a_site_admin_lists_every_study_and_reads_any_of_them(study, other_study, site_admin):
    client = api(site_admin)
    assert {s["slug"] for s in client.get("/api/studies/").json()["results"]} == {"s1", "s2"}
    detail = client.get("/api/studies/s1/")
    assert detail.status_code == 200 and detail.json()["roles"] == []
    assert client.get("/api/studies/s1/members/").status_code == 200
    assert client.get("/api/studies/s1/history/").status_code == 200


def test_a_site_admin_without_a_role_cannot_act_until_they_add_themselves_a_role(study, personas, site_admin):
    client = api(site_admin)
    assert client.patch("/api/studies/s1/", {"near_total_cut": 0.5}, format="json").status_code == 403
    assert client.get("/api/studies/s1/clips/").status_code == 404  # the study's data: members only
    assert client.post("/api/studies/s1/invitations/", {"roles": ["annotator"]}, format="json").status_code == 404
    someone = client.post("/api/studies/s1/members/", {"username": "outsider", "roles": ["annotator"]}, format="json")
    assert someone.status_code == 403
    joined = client.post("/api/studies/s1/members/", {"username": "site-admin", "roles": ["admin"]}, format="json")
    assert joined.status_code == 201, joined.json()
    event = AuditEvent.objects.get(study=study, action="site_admin_join")
    assert (event.actor, event.after) == (site_admin, {"user": "site-admin", "roles": ["admin"]})
    fresh = type(site_admin).objects.get(pk=site_admin.pk)  # a new request reads the roles again
    assert api(fresh).patch("/api/studies/s1/", {"undo_seconds": 30}, format="json").status_code == 200


def test_a_site_admin_opens_the_study_page_read_only(client, study, site_admin):
    client.force_login(site_admin)
    page = client.get("/studies/s1/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="site-reader"' in html and 'id="assign-form"' not in html
    settings_page = client.get("/studies/s1/settings/").content.decode()
    assert "<fieldset disabled>" in settings_page and 'id="study-save"' not in settings_page


def test_a_study_made_in_the_django_admin_is_no_longer_hidden_from_the_site_admin_who_made_it(site_admin, client):
    Study.objects.create(slug="walk-study", name="Walk", taxonomy=taxonomy_default())
    client.force_login(site_admin)
    assert client.get("/studies/walk-study/").status_code == 200
    assert client.get("/api/studies/walk-study/").status_code == 200


# --------------------------------------------------------------------------- pages


def test_the_new_study_page_is_for_those_who_may_create_studies(client, creator, make_user):
    client.force_login(make_user("plain"))
    assert client.get("/studies/new/").status_code == 404
    assert 'id="new-study"' not in client.get("/").content.decode()
    client.force_login(creator)
    assert client.get("/studies/new/").status_code == 200
    assert 'id="new-study"' in client.get("/").content.decode()


def test_the_description_is_shown_on_the_annotators_start_page(client, study, personas):
    study_update(study=study, actor=personas["admin"], changes={"description": "Watch to the <end>."})
    client.force_login(personas["annotator"])
    html = client.get("/studies/s1/queue/").content.decode()
    assert "Watch to the &lt;end&gt;." in html


# --------------------------------------------------------------------------- undo seconds


def test_a_studys_own_undo_seconds_replace_the_sites(study, personas, settings):
    from annotation.api.workflow import workspace_payload
    from annotation.services.workflow import annotations_assign, decision_undo
    from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

    settings.UNDO_SECONDS = 0  # the site: no undo
    study_update(study=study, actor=personas["admin"], changes={"undo_seconds": 30})
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    from annotation.models import Annotation

    submitted = complete(Annotation.objects.get(annotator=personas["annotator"]), personas["annotator"])
    window = (submitted.undo_until - submitted.submitted_at).total_seconds()
    assert 29 <= window <= 31
    assert workspace_payload(Annotation.objects.get(pk=submitted.pk), personas["annotator"])["undo_seconds"] == 30
    undone = decision_undo(annotation_id=submitted.pk, actor=personas["annotator"])
    assert undone.state == "in_progress"


def test_without_its_own_undo_seconds_a_study_uses_the_sites(study, personas, settings):
    from annotation.services.annotation_common import undo_seconds_of

    settings.UNDO_SECONDS = 7
    assert undo_seconds_of(study) == 7
    study_update(study=study, actor=personas["admin"], changes={"undo_seconds": 0})
    assert undo_seconds_of(Study.objects.get(pk=study.pk)) == 0


def test_the_django_admins_add_study_opens_the_new_study_page(client, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    response = client.get("/admin/annotation/study/add/")
    assert (response.status_code, response["Location"]) == (302, "/studies/new/")
