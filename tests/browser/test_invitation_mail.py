"""The members page sends an invitation by e-mail through a real SMTP server on 127.0.0.1 and
shows, per invitation, how it went: a refusing server's answer is on the page, and sending again
from the page reaches the person once the address is right."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Invitation
from annotation.services.studies import membership_grant, study_create
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_members_page_shows_a_refusing_servers_answer_and_sends_again(
    sign_in, live_server, make_user, refusing_smtp_server
):
    admin = make_user("lead")
    study = study_create(slug="mail-lab", name="Mail lab")
    membership_grant(study=study, user=admin, role="admin")
    page = sign_in("lead", "pw-lead")
    page.goto(f"{live_server.url}/studies/mail-lab/members/")
    form = page.locator("#invite-form")
    form.get_by_label("annotator", exact=True).check()
    form.get_by_label("Send the link to (e-mail, optional)").fill("nobody@example.org")
    form.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#invite-mail")).to_contain_text("Not sent to nobody@example.org")
    expect(page.locator("#invite-url")).to_have_value(re.compile(r"/invitations/"))  # the link, to copy
    row = page.locator("#invitations tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator(".invitation-mail")).to_contain_text("not sent")
    expect(row.locator(".mail-error")).to_have_text(
        "The mail server refused the address: nobody@example.org: 550 5.1.1 Recipient address rejected: User unknown")
    screenshot(page, "members-invitation-mail-failed")
    invitation = Invitation.objects.get()
    assert (invitation.state, invitation.mail_state) == ("open", "failed")

    # The server now takes it (the address was fixed on its side): the page's button sends a new link.
    refusing_smtp_server.inbox.refuse = ""
    row.get_by_role("button", name="Send again").click()
    expect(page.locator("#members-result")).to_have_text("Sent to nobody@example.org.")
    expect(row.locator(".invitation-mail")).to_contain_text("sent")
    expect(row.locator(".mail-error")).to_have_count(0)
    [message] = refusing_smtp_server.inbox.messages
    assert f"{live_server.url}/invitations/" in message.get_content()
