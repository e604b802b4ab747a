"""A lab runs its own study in Redline, end to end, through Redline's own pages only.

From a database with nothing but a site admin: the New study page, two clips uploaded on the
study page, captions imported there, an annotator and a reviewer invited on the Members page
(each link accepted in a fresh browser that creates the account), the assignment form, the setup
checklist's Start button, the annotator's workspace for both items, the reviewer's claim, approve
and amend, the failure profile, closing through the confirmation, and the data release read back.
No Django admin, no shell, no service call after the site admin's account is made.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import zipfile

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, Study
from scoring.profile_jobs import profile_jobs
from tests.browser.conftest import ARTIFACTS, screenshot
from tests.conftest import names_word

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLIPS = ("walk-a", "walk-b")
CORRECTED = {
    "walk-a": "A test card whose counter counts from zero to three.",
    "walk-b": "A test pattern with a counter that counts from zero to three.",
}
AMENDED = "A test pattern with a counter that counts from zero to four."


@pytest.fixture(autouse=True)
def no_scoring_per_verdict(settings):
    """Each final verdict would queue a scoring job, run eagerly inside the reviewer's request
    (the models' loading alone takes minutes on this test's CPUs); scoring has its own tests."""
    settings.SCORING_ON_FINAL_VERDICT = False


@pytest.fixture
def videos(tmp_path, ffmpeg_available):
    """Two 4-second test-card videos, as a lab's own files."""
    paths = {}
    for name, source in zip(CLIPS, ("testsrc", "testsrc2"), strict=True):
        path = tmp_path / f"{name}.mp4"
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"{source}=duration=4:size=320x240:rate=25",
             "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path)],
            check=True,
        )
        paths[name] = path
    return paths


def caption_file() -> bytes:
    records = [
        {
            "clip": clip,
            "model": "lab-vlm-7b",
            "overview": "A test card with a clock that counts up.",
            "windows": [
                {"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
                {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."},
            ],
        }
        for clip in CLIPS
    ]
    return "\n".join(json.dumps(record) for record in records).encode()


def shot(page, tmp_path, name: str, section: str | None = None) -> None:
    """The whole page into the test's folder and artifacts/screenshots/, and the part a reader
    of the README looks at (a section, or the window's view) beside it (docs/run-study-*.png)."""
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    screenshot(page, f"run-study-{name}")
    part = ARTIFACTS / f"run-study-{name}-part.png"
    if section:
        page.locator(section).screenshot(path=str(part))
    else:
        page.screenshot(path=str(part))


def invite(page, role_label: str, note: str) -> str:
    form = page.locator("#invite-form")
    form.get_by_label(role_label, exact=True).check()
    form.get_by_label("For (a name or an e-mail address, for you)").fill(note)
    form.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#invite-link")).to_be_visible()
    expect(form.get_by_label(role_label, exact=True)).not_to_be_checked()  # the form starts afresh
    return page.locator("#invite-url").input_value()


def join(browser, live_server, link: str, username: str, slug: str):
    """Accept an invitation in a fresh browser, creating the account; the person is signed in."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(link)
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password", exact=True).fill(f"{username}-long-password")
    page.get_by_label("Password again").fill(f"{username}-long-password")
    page.get_by_role("button", name="Create account and join").click()
    page.wait_for_url(f"{live_server.url}/studies/{slug}/")
    return context, page


def annotate(page, live_server, slug: str) -> str:
    """Start the next item from the queue; reject the overview with a correction, accept both
    windows and the segmentation, submit. Returns the clip's name."""
    page.goto(f"{live_server.url}/studies/{slug}/queue/")
    page.keyboard.press("Enter")  # "Start next" has the focus
    page.wait_for_selector("#workspace[data-ready=true]")
    item = Annotation.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    clip = item.caption.clip.name
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type(CORRECTED[clip])
    page.keyboard.press("Alt+1")  # factual error
    page.keyboard.press("Escape")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='1']")
    page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='2']")  # segmentation
    page.keyboard.press("a")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    return clip


def claim_first(page, live_server, slug: str) -> None:
    page.goto(f"{live_server.url}/studies/{slug}/review/")
    page.wait_for_selector("body[data-loaded='true']")
    page.locator("#queue tbody tr button[data-claim]").first.click()
    page.wait_for_url(f"{live_server.url}/review/*/")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator("#claim")).to_contain_text("Claimed by you")


def test_a_lab_runs_its_own_study_from_an_empty_database_through_the_pages(
    sign_in, live_server, browser, make_user, videos, tmp_path
):
    # A fresh install holds the default taxonomy (migration 0003); an earlier test's flush may
    # have emptied it, so put back what the migration gives.
    from annotation.services.taxonomy import taxonomy_default

    taxonomy_default()
    make_user("root", is_staff=True)
    admin = sign_in("root", "pw-root")
    errors: list[str] = []
    admin.on("pageerror", lambda error: errors.append(str(error)))

    # 1. The study, on the New study page; undo at 0 s so that decisions stand at once.
    admin.get_by_role("link", name="New study").click()
    admin.wait_for_selector("#study-form[data-ready=true]")
    admin.get_by_label("Name").fill("Lab walk")
    expect(admin.get_by_label("Slug")).to_have_value("lab-walk")
    admin.get_by_label("Undo time (seconds)").fill("0")
    with admin.expect_response(lambda r: r.url.endswith("/api/studies/") and r.request.method == "POST",
                               timeout=90_000) as created:
        admin.get_by_role("button", name="Create study").click()
    assert created.value.status == 201, created.value.text()
    admin.wait_for_url(f"{live_server.url}/studies/lab-walk/members/", timeout=60_000)
    study = Study.objects.get(slug="lab-walk")
    assert (study.state, study.undo_seconds) == ("setup", 0)

    # 2. Members: the admin takes the researcher role too; an annotator and a reviewer by link.
    own = admin.locator("#members tr[data-member=root]")
    own.get_by_label("researcher").check()
    own.get_by_role("button", name="Save roles").click()
    expect(admin.locator("#members-result")).to_contain_text("root is now")
    annotator_link = invite(admin, "annotator", "Ana")
    reviewer_link = invite(admin, "QC reviewer", "Rui")
    expect(admin.locator("#invitations tbody tr")).to_have_count(2)
    annotator_context, annotator = join(browser, live_server, annotator_link, "ana", "lab-walk")
    reviewer_context, reviewer = join(browser, live_server, reviewer_link, "rui", "lab-walk")

    # 3. Clips and captions, on the study page; the checklist still misses the assignment.
    admin.goto(f"{live_server.url}/studies/lab-walk/")
    checklist = admin.locator("#setup-checklist")
    expect(checklist.locator("li.missing")).to_have_count(3)  # clips, captions, assignment
    for name in CLIPS:
        upload = admin.locator("#imports form").filter(has=admin.get_by_label("video file"))
        upload.get_by_label("video file").set_input_files(str(videos[name]))
        with admin.expect_navigation(timeout=30_000):  # the page reloads to show the new clip
            upload.get_by_role("button", name="Upload").click()
            expect(admin.locator("#import-result")).to_contain_text(f'"name":"{name}"', timeout=30_000)
        expect(admin.locator(f".clip-card[data-clip={name}]")).to_contain_text("4.0 s · 320×240")
    form = admin.locator("#caption-import-form")
    form.get_by_label("caption file").set_input_files(
        files=[{"name": "captions.jsonl", "mimeType": "application/jsonl", "buffer": caption_file()}]
    )
    form.get_by_role("button", name="Import").click()
    job = admin.locator("#caption-import-jobs .import-job")
    expect(job.locator(".import-job-state")).to_have_text("done")
    expect(job.locator(".import-job-report")).to_contain_text("Stored 2 caption(s)")

    admin.reload()
    expect(checklist.locator("li.missing")).to_have_count(1)
    expect(checklist.locator("li[data-item=assignment]")).to_have_class("missing")
    admin.get_by_role("button", name="Start the study").click()
    expect(admin.locator("#lifecycle-result")).to_contain_text("no caption is assigned")
    shot(admin, tmp_path, "checklist", "#lifecycle")

    # 4. Assign and start.
    assign = admin.locator("#assign-form")
    expect(assign.get_by_label("ana")).to_be_checked()
    assign.get_by_role("button", name="Assign unassigned captions").click()
    result = admin.locator("#assign-result")
    expect(result).not_to_have_text(re.compile(r"^$|Assigning"))
    expect(result).not_to_have_class(re.compile("error"))
    assert Annotation.objects.filter(caption__clip__study=study, annotator__username="ana").count() == 2
    admin.reload()
    expect(checklist.locator("li.missing")).to_have_count(0)
    admin.get_by_role("button", name="Start the study").click()
    expect(admin.locator("#dashboard")).to_be_visible()
    assert Study.objects.get(slug="lab-walk").state == "running"

    # 5. The annotator does both items in the workspace.
    done = {annotate(annotator, live_server, "lab-walk") for _ in CLIPS}
    assert done == set(CLIPS)
    annotator.goto(f"{live_server.url}/studies/lab-walk/queue/")
    assert Annotation.objects.filter(caption__clip__study=study, state="submitted").count() == 2

    # 6. The reviewer approves one and amends the other.
    claim_first(reviewer, live_server, "lab-walk")
    reviewer.get_by_role("button", name="Approve", exact=True).click()
    expect(reviewer.locator("#notice")).to_contain_text("Approved.")
    claim_first(reviewer, live_server, "lab-walk")
    amended_clip = Annotation.objects.get(caption__clip__study=study, state="in_review").caption.clip.name
    reviewer.locator("body").press("e")
    text = reviewer.get_by_label("QC overview text")
    expect(text).to_be_focused()
    text.fill(AMENDED)
    reviewer.get_by_role("button", name="Save amendments and approve").click()
    expect(reviewer.locator("#notice")).to_contain_text("Amended and approved")
    assert Annotation.objects.filter(caption__clip__study=study, state="approved").count() == 2

    admin.reload()
    expect(admin.locator("[data-count=unscored] dd")).to_have_text("2")  # no scoring job run yet
    shot(admin, tmp_path, "dashboard", "#lifecycle")

    # 7. The failure profile, built on its page.
    admin.get_by_role("link", name="Failure profile").click()
    admin.wait_for_selector("#profile-form[data-ready=true]")
    admin.get_by_label("Bootstrap resamples").fill("100")
    admin.get_by_label("Adjusted-model resamples").fill("20")
    admin.get_by_role("button", name="Build profile").click()
    expect(admin.locator("#profile-step")).to_have_text("Done.", timeout=180_000)
    expect(admin.locator("#profile-main-table tbody tr")).to_have_count(1)
    shot(admin, tmp_path, "profile")

    # 8. Close through the confirmation, then download the release and read it back.
    admin.goto(f"{live_server.url}/studies/lab-walk/")
    admin.get_by_role("button", name="Close the study…").click()
    dialog = admin.locator("#close-dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close the study").click()
    expect(admin.get_by_role("heading", name="Study closed")).to_be_visible(timeout=180_000)
    assert Study.objects.get(slug="lab-walk").state == "closed"
    final = [job for job in profile_jobs(study=study) if job["final"]]  # built at closing
    assert [(job["state"], job["requested_by"]) for job in final] == [("done", "root")]

    admin.locator("#release-license").select_option("CC0-1.0")
    with admin.expect_download() as download:
        admin.get_by_role("button", name="Download the release (zip)").click()
    archive = zipfile.ZipFile(download.value.path())
    rows = pq.read_table(io.BytesIO(archive.read("lab-walk-release/captions.parquet"))).to_pylist()
    expected = {**CORRECTED, amended_clip: AMENDED}
    assert {row["clip"]: row["final_overview"] for row in rows} == expected
    assert {row["clip"]: row["reviewer_decision"] for row in rows} == {
        clip: "amended" if clip == amended_clip else "approved" for clip in CLIPS}
    assert all(row["overview_verdict"] == "reject" and row["overview_modes"] == ["factual"] for row in rows)
    people = {row["annotator"] for row in rows} | {row["reviewer"] for row in rows}
    assert len(people) == 2 and all(person.startswith("person-") for person in people)
    for name in archive.namelist():
        if name.endswith((".md", ".jsonl")):
            text = archive.read(name).decode()
            assert not names_word(text, "ana") and not names_word(text, "rui"), name
    assert not errors

    annotator_context.close()
    reviewer_context.close()
