"""The annotator's pages as the server renders them: the queue, the workspace, the study page's links."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.models import Annotation
from annotation.services import workflow as flow
from annotation.services.studies import membership_grant
from tests.conftest import jsonl, names_word

pytestmark = pytest.mark.django_db

PAYLOAD = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def workspace_data(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="workspace-data" type="application/json">') + len(
        '<script id="workspace-data" type="application/json">')
    return json.loads(html[start:html.index("</script>", start)])


def complete_and_return(annotation, annotator, reviewer, comment: str) -> None:
    def version():
        return Annotation.objects.get(pk=annotation.pk).version

    flow.annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=version(),
                         changes={"overview": {"verdict": "accept"}})
    flow.overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=version())
    indexes = list(annotation.caption.windows.values_list("index", flat=True))
    flow.annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=version(), changes={
        "windows": [{"index": i, "verdict": "accept"} for i in indexes], "segmentation": {"verdict": "accept"}})
    flow.annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=version())
    flow.review_claim(annotation_id=annotation.pk, actor=reviewer)
    flow.review_return(annotation_id=annotation.pk, actor=reviewer,
                       units=[{"unit": "window:0", "comment": comment}])


@pytest.fixture
def two_items(annotation, study, personas):
    """The fixture's annotation of clip b plus a new one of clip a, both the annotator's."""
    from annotation.services.captions import captions_import_jsonl

    captions_import_jsonl(study=study, data=jsonl({
        "clip": "a", "model": "m1", "overview": "Colour bars.",
        "windows": [{"start": 0, "end": 4, "scene": "Bars.", "shot": "Static."}],
    }))
    flow.annotations_assign(study=study, annotators=[personas["annotator"]])
    return annotation, Annotation.objects.get(caption__clip__name="a")


def test_queue_lists_returned_items_first_with_the_reviewers_comment(two_items, personas):
    in_progress, new = two_items
    complete_and_return(in_progress, personas["annotator"], personas["reviewer"], "Look at <b>window 2</b> again.")
    page = client_for(personas["annotator"]).get("/studies/s1/queue/").content.decode()
    assert page.index(f'data-id="{in_progress.pk}"') < page.index(f'data-id="{new.pk}"')
    assert 'data-state="returned"' in page
    assert "Look at &lt;b&gt;window 2&lt;/b&gt; again." in page
    assert "1 returned by QC" in page


def test_queue_shows_counts_progress_and_start_next(two_items, personas):
    page = client_for(personas["annotator"]).get("/studies/s1/queue/").content.decode()
    assert "0 of 2</strong> submitted (0%)" in page
    assert "2 to do" in page and "1 in progress" in page and "1 new" in page
    assert 'id="start-next"' in page and "/api/studies/s1/my-queue/next/" in page
    assert "Model A" in page and not names_word(page, "m1")


def test_queue_of_a_study_one_is_not_in_is_not_found(annotation, personas):
    assert client_for(personas["outsider"]).get("/studies/s1/queue/").status_code == 404


def test_empty_queue_says_nothing_is_assigned(personas):
    page = client_for(personas["annotator"]).get("/studies/s1/queue/").content.decode()
    assert "Nothing has been assigned to you" in page
    assert 'id="start-next"' in page and "disabled" in page


def test_looking_at_a_new_annotation_changes_nothing_and_offers_to_start(caption, study, personas):
    flow.annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    item = Annotation.objects.get()
    response = client_for(personas["annotator"]).get(f"/annotate/{item.pk}/")
    assert response.status_code == 200
    assert 'id="start-work"' in response.content.decode()
    assert "Model A" in response.content.decode()
    fresh = Annotation.objects.get()
    assert (fresh.state, fresh.version, fresh.started_at) == ("assigned", item.version, None)
    assert client_for(personas["annotator"]).get(f"/api/annotations/{item.pk}/").json()[
        "state"] == "assigned"


def test_workspace_starts_with_a_post_and_embeds_the_payload(caption, study, personas):
    flow.annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    item = Annotation.objects.get()
    client = client_for(personas["annotator"])
    started = client.post(f"/annotate/{item.pk}/")
    assert started.status_code == 302 and started.url == f"/annotate/{item.pk}/"
    response = client.get(f"/annotate/{item.pk}/")
    data = workspace_data(response)
    assert data["state"] == "in_progress" and data["version"] == item.version + 1
    assert [w["start"] for w in data["caption"]["windows"]] == [0, 2, 4]
    assert [m["key"] for m in data["taxonomy"]["modes"]][:3] == ["factual", "omission", "camera"]
    assert data["near_total_cut"] == study.near_total_cut
    assert 'type="module"' in response.content.decode() and "workspace.js" in response.content.decode()


def test_the_api_starts_an_annotation_only_with_a_post(caption, study, personas):
    flow.annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    item = Annotation.objects.get()
    client = client_for(personas["annotator"])
    client.get(f"/api/annotations/{item.pk}/")
    assert Annotation.objects.get().state == "assigned"
    answer = client.post(f"/api/annotations/{item.pk}/open/")
    assert answer.status_code == 200 and answer.json()["state"] == "in_progress"


def test_an_annotator_who_is_also_admin_still_sees_only_the_alias(annotation, study, personas):
    membership_grant(study=study, user=personas["annotator"], role="admin")
    client = client_for(personas["annotator"])
    response = client.get(f"/annotate/{annotation.pk}/")
    assert workspace_data(response)["caption"]["model"] == "Model A"
    assert not names_word(response.content.decode(), "m1")
    assert client.get(f"/api/annotations/{annotation.pk}/").json()["caption"]["model"] == "Model A"
    assert client_for(personas["admin"]).get(f"/api/annotations/{annotation.pk}/").json()["caption"]["model"] == "m1"


def test_caption_html_stays_inside_the_json_and_escaped(personas, clips, study):
    from annotation.services.captions import captions_import_jsonl

    captions_import_jsonl(study=study, data=jsonl({
        "clip": "b", "model": "m1", "overview": PAYLOAD,
        "windows": [{"start": 0, "end": 6, "scene": PAYLOAD, "shot": PAYLOAD}],
    }))
    flow.annotations_assign(study=study, annotators=[personas["annotator"]])
    client = client_for(personas["annotator"])
    start = client.get(f"/annotate/{Annotation.objects.get().pk}/").content.decode()
    assert "<img src=x" not in start and "<script>alert" not in start
    client.post(f"/annotate/{Annotation.objects.get().pk}/")
    response = client.get(f"/annotate/{Annotation.objects.get().pk}/")
    html = response.content.decode()
    assert "<img src=x" not in html and "<script>alert" not in html
    assert workspace_data(response)["caption"]["overview"] == PAYLOAD


def test_other_annotators_cannot_open_the_workspace(annotation, study, personas, make_user):
    other = make_user("other")
    membership_grant(study=study, user=other, role="annotator")
    assert client_for(other).get(f"/annotate/{annotation.pk}/").status_code == 404
    assert client_for(personas["outsider"]).get(f"/annotate/{annotation.pk}/").status_code == 404


def test_the_workspace_page_reads_the_annotation_once(annotation, personas, django_assert_max_num_queries):
    """The session with its person, the annotation with its study, its passes and the annotator's
    roles, the study's current consent (none here), then the annotation's window corrections,
    windows and failure modes, then the study's current guidelines (none here): neither the study
    (through a three-table join) nor the annotation is read a second time."""
    client = client_for(personas["annotator"])
    with django_assert_max_num_queries(7):
        assert client.get(f"/annotate/{annotation.pk}/").status_code == 200


@pytest.mark.parametrize("path", ["/annotate/{id}/", "/api/annotations/{id}/"])
def test_the_workspace_reads_the_passes_with_the_annotation_and_shows_them_as_stored(
        path, annotation, personas, client):
    """No statement reads the passes, nor the viewer's roles, nor (the page) the study's consent,
    apart; what the page and the API show of both passes is a fresh read's, and an annotation
    without passes shows none."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation, CorrectionPass
    from annotation.services.workflow import annotation_open, annotation_save, annotation_snapshot

    annotator = personas["annotator"]
    client.force_login(annotator)
    url = path.format(id=annotation.pk)
    empty = client.get(url)
    assert empty.status_code == 200 and "First &amp; only." not in empty.content.decode()
    opened = annotation_open(annotation=annotation, actor=annotator)
    annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=opened.version,
                    changes={"overview": {"verdict": "reject", "text": "First & only.", "modes": ["factual"]}})
    CorrectionPass.objects.create(annotation_id=annotation.pk, kind=CorrectionPass.Kind.QC,
                                  author=personas["reviewer"], overview_text="The reviewer's <text>.")
    with CaptureQueriesContext(connection) as captured:
        answer = client.get(url)
    assert answer.status_code == 200
    reads = [q["sql"] for q in captured.captured_queries if '"annotation_correctionpass"' in q["sql"]]
    assert len(reads) == 1 and 'FROM "annotation_annotation"' in reads[0], reads
    roles = [q["sql"] for q in captured.captured_queries if '"annotation_membership"' in q["sql"]]
    assert roles == reads, roles  # the viewer's roles come in the same statement
    consent = [q["sql"] for q in captured.captured_queries if '"annotation_consentversion"' in q["sql"]]
    assert consent == (reads if path.startswith("/annotate/") else []), consent  # the page's consent gate too
    fresh = annotation_snapshot(Annotation.objects.get(pk=annotation.pk))
    if path.startswith("/api/"):
        body = answer.json()
        assert body["annotator_pass"] == fresh["annotator_pass"] and body["qc_pass"] == fresh["qc_pass"]
        assert body["qc_pass"]["overview"]["text"] == "The reviewer's <text>."
    else:
        page = answer.content.decode()
        assert "First \\u0026 only." in page or "First &amp; only." in page
        assert "The reviewer's <text>." not in page  # untrusted text is escaped


def test_reviewers_are_sent_to_the_review_page(annotation, personas):
    response = client_for(personas["reviewer"]).get(f"/annotate/{annotation.pk}/")
    assert response.status_code == 302 and response.url == f"/review/{annotation.pk}/"


def test_pages_need_a_login(annotation):
    assert Client().get(f"/annotate/{annotation.pk}/").status_code == 302
    assert Client().get("/studies/s1/queue/").status_code == 302


def test_study_page_links_annotators_to_their_queue(personas):
    page = client_for(personas["annotator"]).get("/studies/s1/").content.decode()
    assert 'href="/studies/s1/queue/"' in page
    assert 'id="assign-form"' not in page


def test_study_page_gives_admins_the_assignment_form(personas):
    page = client_for(personas["admin"]).get("/studies/s1/").content.decode()
    assert 'id="assign-form"' in page and 'value="annotator"' in page
    assert "/api/studies/s1/assignments/" in page
    assert 'href="/studies/s1/queue/"' not in page


def test_every_page_names_an_icon_that_exists(annotation, personas):
    import re

    from django.contrib.staticfiles import finders

    for client, path in ((Client(), "/login/"), (client_for(personas["annotator"]), f"/annotate/{annotation.pk}/")):
        page = client.get(path).content.decode()
        found = re.search(r'<link rel="icon" href="/static/([^"]+)"', page)
        assert found, path
        assert finders.find(found.group(1)) is not None
