"""A lab admin sets a study up in the browser: the New study page (field messages for bad
values), then an invitation accepted in a fresh browser by someone without an account, a
change of roles and a deactivation on the members page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from annotation.models import AuditEvent, Membership, Study
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def creator(make_user):
    person = make_user("lab-admin")
    person.user_permissions.add(Permission.objects.get(codename="add_study", content_type__app_label="annotation"))
    return person


def roles(slug: str, username: str) -> list[str]:
    return sorted(Membership.objects.filter(study__slug=slug, user__username=username).values_list("role", flat=True))


def test_a_lab_admin_creates_a_study_on_the_new_study_page_with_field_messages_for_bad_values(
    sign_in, live_server, creator, study
):
    page = sign_in("lab-admin", "pw-lab-admin")
    page.get_by_role("link", name="New study").click()
    page.wait_for_selector("#study-form[data-ready=true]")  # typed before, the name would be lost
    page.get_by_label("Name").fill("Walk study")
    expect(page.get_by_label("Slug")).to_have_value("walk-study")  # suggested from the name
    expect(page.locator("#taxonomy-modes")).to_contain_text("Factual")  # the definitions, shown

    page.get_by_label("Slug").fill("Walk_Study")
    expect(page.locator("#e-slug")).to_contain_text("lowercase letters, digits and single hyphens")
    page.get_by_label("Slug").fill("s1")  # taken: the server says so as it is typed
    expect(page.locator("#e-slug")).to_contain_text("already exists")
    page.get_by_label("Word thresholds").fill("1, 6, 3")
    expect(page.locator("#e-word_thresholds")).to_contain_text("must ascend")
    page.get_by_label("Near-total cut").fill("1.2")
    expect(page.locator("#e-near_total_cut")).to_contain_text("(0, 1)")
    page.get_by_label("Length band (± %)").fill("80")
    expect(page.locator("#e-length_band")).to_contain_text("from 0 to 50%")
    page.get_by_label("Undo time (seconds)").fill("ten")
    expect(page.locator("#e-undo_seconds")).to_contain_text("whole number")
    page.get_by_role("button", name="Create study").click()
    expect(page.locator("#study-result")).to_contain_text("Some fields need fixing")
    assert page.evaluate("document.activeElement.id") == "f-slug"
    screenshot(page, "study-new-field-messages")
    assert not Study.objects.filter(name="Walk study").exists()

    page.get_by_label("Slug").fill("walk-study")
    page.get_by_label("Word thresholds").fill("1, 3, 6, 16")
    page.get_by_label("Near-total cut").fill("0.55")
    page.get_by_label("Length band (± %)").fill("5")
    page.get_by_label("Undo time (seconds)").fill("20")
    page.get_by_label("Description for annotators").fill("Watch each clip to the end before judging.")
    page.get_by_label("Caption language").select_option("zh")
    page.get_by_label("Overlap (%)").fill("10")
    expect(page.locator(".field-error:not(:empty)")).to_have_count(0)
    page.get_by_role("button", name="Create study").click()
    page.wait_for_url(f"{live_server.url}/studies/walk-study/members/")
    created = Study.objects.get(slug="walk-study")
    assert (created.word_thresholds, created.length_band, created.undo_seconds, created.caption_language,
            created.overlap_share, created.state) == ([1, 3, 6, 16], 0.05, 20, "zh", 0.1, "setup")
    assert roles("walk-study", "lab-admin") == ["admin"]

    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_label("Slug")).to_have_attribute("readonly", "")
    expect(page.get_by_label("Undo time (seconds)")).to_have_value("20")
    page.get_by_label("Near-total cut").fill("0.5")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#study-result")).to_have_text("Saved.")
    assert Study.objects.get(slug="walk-study").near_total_cut == 0.5
    assert AuditEvent.objects.filter(study__slug="walk-study", action="study_update").count() == 1


def test_a_study_admin_invites_a_person_who_joins_in_a_fresh_browser_then_changes_their_roles_and_deactivates(
    sign_in, live_server, personas, browser
):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/members/")
    expect(page.locator("#members tr[data-member=annotator]")).to_be_visible()
    invite = page.locator("#invite-form")
    invite.get_by_label("annotator").check()
    invite.get_by_label("researcher").check()
    invite.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#invite-error")).to_contain_text("both annotator and researcher")
    invite.get_by_label("researcher").uncheck()
    invite.get_by_label("For (a name or an e-mail address, for you)").fill("Ana, new annotator")
    invite.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#invite-link")).to_be_visible()
    link = page.locator("#invite-url").input_value()
    assert "/invitations/" in link
    expect(page.locator("#invitations tbody tr")).to_have_count(1)
    expect(page.locator("#invitations tbody tr")).to_contain_text("open")
    screenshot(page, "study-members-invitation")

    fresh = browser.new_context(viewport={"width": 1280, "height": 860})
    newcomer = fresh.new_page()
    newcomer.goto(link)
    expect(newcomer.get_by_role("heading", name="Join Study one")).to_be_visible()
    newcomer.get_by_label("User name").fill("ana")
    newcomer.get_by_label("Password", exact=True).fill("short")
    newcomer.get_by_label("Password again").fill("short")
    newcomer.get_by_role("button", name="Create account and join").click()
    expect(newcomer.locator("#e-password")).to_contain_text("too short")
    screenshot(newcomer, "invitation-accept")
    newcomer.get_by_label("Password", exact=True).fill("a-long-password")
    newcomer.get_by_label("Password again").fill("a-long-password")
    newcomer.get_by_role("button", name="Create account and join").click()
    newcomer.wait_for_url(f"{live_server.url}/studies/s1/")
    expect(newcomer.get_by_role("heading", name="Study one")).to_be_visible()
    assert roles("s1", "ana") == ["annotator"]
    newcomer.goto(link)  # the link worked once
    expect(newcomer.locator("#invitation-invalid")).to_contain_text("already used")
    fresh.close()

    page.reload()
    row = page.locator("#members tr[data-member=ana]")
    expect(row).to_be_visible()
    row.get_by_label("QC reviewer").check()
    row.get_by_role("button", name="Save roles").click()
    expect(page.locator("#members-result")).to_have_text("ana is now annotator, reviewer.")
    assert roles("s1", "ana") == ["annotator", "reviewer"]
    page.wait_for_load_state("networkidle")  # the members list is drawn again after a save
    row = page.locator("#members tr[data-member=ana]")
    row.get_by_label("researcher").check()
    row.get_by_role("button", name="Save roles").click()
    expect(page.locator("#members-result")).to_contain_text("both annotator and researcher")
    assert roles("s1", "ana") == ["annotator", "reviewer"]

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#members tr[data-member=ana]").get_by_role("button", name="Deactivate").click()
    expect(page.locator("#members-result")).to_contain_text("ana is no longer a member")
    expect(page.locator("#members tr[data-member=ana]")).to_contain_text("deactivated")
    assert roles("s1", "ana") == []
    screenshot(page, "study-members")

    page.get_by_role("link", name="History").click()
    expect(page.locator("#history")).to_contain_text("Deactivated ana.")
    expect(page.locator("#history")).to_contain_text("ana accepted invitation")
    assert AuditEvent.objects.filter(study__slug="s1", action="member_roles").count() == 1
    screenshot(page, "study-history")


def test_a_site_admin_sees_a_study_read_only_until_adding_themselves_a_role(sign_in, live_server, personas, make_user):
    make_user("root", is_staff=True)
    page = sign_in("root", "pw-root")
    page.get_by_role("link", name="Study one").click()
    expect(page.locator("#site-reader")).to_contain_text("read-only")
    page.locator(".study-tabs").get_by_role("link", name="Members").click()
    expect(page.locator("#members tr[data-member=annotator]")).to_contain_text("annotator")
    expect(page.locator("#invite-form")).to_have_count(0)
    page.locator("#join-form").get_by_role("button", name="Add me").click()
    expect(page.locator("#invite-form")).to_be_visible()
    expect(page.locator("#site-reader")).to_have_count(0)
    assert roles("s1", "root") == ["admin"]
    assert AuditEvent.objects.filter(study__slug="s1", action="site_admin_join", actor__username="root").exists()
