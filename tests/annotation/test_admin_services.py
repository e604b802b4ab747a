"""The Django admin writes a study's settings and members through the services: the same audit
events as the study's own pages, the same refusals for a site admin without a role there; the
rows that imports write are read-only in it, and it names no model to who works blind."""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser

import pytest
from django.test import Client

from annotation.models import AuditEvent, CandidateModel, Membership, Study
from annotation.permissions import MEMBERS_REFUSAL, SETTINGS_REFUSAL
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, fake_clip

pytestmark = pytest.mark.django_db


class _FormFields(HTMLParser):
    """The values a browser would send for the admin's change form, as the page shows them."""

    def __init__(self):
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        name = attrs.get("name")
        if tag == "input" and name and attrs.get("type") not in ("submit", "button", "checkbox"):
            self.values[name] = attrs.get("value") or ""
        elif tag == "input" and name and attrs.get("type") == "checkbox" and "checked" in attrs:
            self.values[name] = "on"
        elif tag == "select" and name:
            self._select = name
            self.values.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in attrs:
            self.values[self._select] = attrs.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea] += data.removeprefix("\n")


def change_form(client: Client, url: str) -> dict[str, str]:
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    parser = _FormFields()
    parser.feed(page.content.decode())
    return parser.values


@pytest.fixture
def site_admin(make_user):
    return make_user("site-admin", is_staff=True, is_superuser=True)


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def study_url(study) -> str:
    return f"/admin/annotation/study/{study.pk}/change/"


def new_membership(values: dict[str, str], user, role: str) -> dict[str, str]:
    """The inline's empty row filled in: `user` as `role`."""
    n = int(values["memberships-TOTAL_FORMS"]) - 1
    return {**values, f"memberships-{n}-user": str(user.pk), f"memberships-{n}-role": role}


def test_a_site_admin_adding_themselves_in_the_admin_is_the_members_pages_event(study, personas, site_admin):
    client = admin_client(site_admin)
    answer = client.post(study_url(study), new_membership(change_form(client, study_url(study)), site_admin, "admin"))
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert set(Membership.objects.filter(study=study, user=site_admin).values_list("role", flat=True)) == {"admin"}
    event = AuditEvent.objects.get(study=study, action="site_admin_join")
    assert (event.actor, event.before, event.after) == (site_admin, {}, {"user": "site-admin", "roles": ["admin"]})


def test_the_same_event_as_when_joining_through_the_members_api(other_study, site_admin):
    client = admin_client(site_admin)
    answer = client.post(f"/api/studies/{other_study.slug}/members/", {"username": "site-admin", "roles": ["admin"]},
                         content_type="application/json")
    assert answer.status_code == 201
    event = AuditEvent.objects.get(study=other_study, action="site_admin_join")
    assert (event.before, event.after) == ({}, {"user": "site-admin", "roles": ["admin"]})


def test_a_site_admin_without_a_role_gets_the_same_refusals_in_the_admin(study, personas, site_admin, make_user):
    client = admin_client(site_admin)
    values = change_form(client, study_url(study))
    events = AuditEvent.objects.count()
    someone = make_user("someone")
    answer = client.post(study_url(study), new_membership(values, someone, "annotator"))
    assert answer.status_code == 403
    assert not Membership.objects.filter(user=someone).exists()
    renamed = client.post(study_url(study), {**values, "name": "Taken over"})
    assert renamed.status_code == 403
    assert Study.objects.get(pk=study.pk).name == "Study one"
    assert AuditEvent.objects.count() == events
    api = client.patch(f"/api/studies/{study.slug}/", {"name": "Taken over"}, content_type="application/json")
    assert api.status_code == 403 and api.json()["detail"] == SETTINGS_REFUSAL
    assert escape(SETTINGS_REFUSAL) in renamed.content.decode() and escape(MEMBERS_REFUSAL) in answer.content.decode()


def test_a_study_admin_renaming_and_changing_roles_in_the_admin_is_audited(study, personas, site_admin):
    Membership.objects.create(study=study, user=site_admin, role="admin")
    client = admin_client(site_admin)
    values = change_form(client, study_url(study))
    rows = {values[f"memberships-{n}-user"]: n for n in range(int(values["memberships-INITIAL_FORMS"]))}
    n = rows[str(personas["researcher"].pk)]
    values = {**values, "name": "Study one, renamed", f"memberships-{n}-role": "reviewer"}
    answer = client.post(study_url(study), values)
    assert answer.status_code == 302
    assert Study.objects.get(pk=study.pk).name == "Study one, renamed"
    assert AuditEvent.objects.filter(study=study, action="study_update", actor=site_admin,
                                     after={"name": "Study one, renamed"}).exists()
    roles = AuditEvent.objects.get(study=study, action="member_roles")
    assert roles.after == {"user": "researcher", "roles": ["reviewer"]}
    assert list(Membership.objects.filter(study=study, user=personas["researcher"]).values_list("role", flat=True)) \
        == ["reviewer"]


def test_models_and_captions_are_read_only_and_hidden_from_who_works_blind(study, personas, site_admin):
    fake_clip(study, "b")
    captions_add(study, [caption_record("b", SECRET_MODEL)])
    model = CandidateModel.objects.get(name=SECRET_MODEL)
    client = admin_client(site_admin)
    assert SECRET_MODEL in client.get("/admin/annotation/candidatemodel/").content.decode()
    values = change_form(client, f"/admin/annotation/candidatemodel/{model.pk}/change/")
    assert "name" not in values  # shown, not offered
    answer = client.post(f"/admin/annotation/candidatemodel/{model.pk}/change/", {**values, "name": "Renamed"})
    assert answer.status_code == 403
    assert CandidateModel.objects.get(pk=model.pk).name == SECRET_MODEL
    Membership.objects.create(study=study, user=site_admin, role="reviewer")
    for url in ("/admin/annotation/candidatemodel/", "/admin/annotation/caption/"):
        assert SECRET_MODEL not in client.get(url).content.decode(), url
