"""A real SMTP server on 127.0.0.1 (aiosmtpd), for the tests of e-mail sending: it keeps every
message it accepts, or refuses every recipient with the answer it was given."""

from __future__ import annotations

import email
import email.policy
import socket
from dataclasses import dataclass, field

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Inbox:
    """aiosmtpd's handler: what the server answers and what it received."""

    refuse: str = ""  # e.g. "550 5.1.1 <x@y>: Recipient address rejected"
    messages: list[email.message.EmailMessage] = field(default_factory=list)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802 - aiosmtpd's name
        if self.refuse:
            return self.refuse
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        self.messages.append(message)
        return "250 Message accepted for delivery"

    def texts(self) -> list[str]:
        return [message.get_content() for message in self.messages]


class SmtpServer:
    def __init__(self, refuse: str = ""):
        self.inbox = Inbox(refuse=refuse)
        self.port = free_port()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    def __enter__(self) -> SmtpServer:
        self.controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self.controller.stop()

    def use(self, settings) -> None:
        """Point Django's SMTP backend at this server (pytest-django's `settings`)."""
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", self.port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_TIMEOUT = 10
