"""Django's database sessions, each request's session and its person read in one statement.

Every request reads its session by its key, and a signed-in one then the person it signs in.
This store keeps Django's table and format (Django's own store and this one read each other's
sessions) with one more column, the signed-in person's id (annotation.models.SignedInSession),
written whenever the session is saved. Its read (a prepared read, annotation.prepared) takes
the person's row with the session's, and config.auth signs that person in without reading them
again, once it has checked that the session's data names the same person.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends import db
from django.utils import timezone

from annotation.models import SignedInSession
from annotation.prepared import prepared
from config.auth import BACKEND, DJANGO_BACKEND


@prepared
def _session_read(*, session_key: str, now):
    return SignedInSession.objects.filter(session_key=session_key, expire_date__gt=now).select_related("user")


# The ids the column holds (auth_user's: 32 bits).
_PERSON_IDS = range(1, 2**31)


def _signed_in_id(data: dict[str, Any]) -> int | None:
    """The id of the person the session's data signs in (Django keeps it as text), else None;
    None too for an id no person can have (config.auth then reads it and finds nobody)."""
    value = str(data.get(SESSION_KEY, ""))
    return int(value) if value.isascii() and value.isdigit() and int(value) in _PERSON_IDS else None


class SessionStore(db.SessionStore):
    # The person read with the session: None when nobody, or not read (config.auth reads them then).
    person_read = None

    @classmethod
    def get_model_class(cls):
        return SignedInSession

    def create_model_instance(self, data: dict[str, Any]) -> SignedInSession:
        instance = super().create_model_instance(data)
        instance.user_id = _signed_in_id(data)
        return instance

    def load(self) -> dict[str, Any]:
        """The session's data; {} and no key when it is unknown or expired (as Django's store)."""
        self.person_read = None
        rows = _session_read(session_key=self.session_key, now=timezone.now())
        if not rows:
            self._session_key = None
            return {}
        data = self.decode(rows[0].session_data)
        if data.get(BACKEND_SESSION_KEY) == DJANGO_BACKEND:  # signed in before config.auth
            data[BACKEND_SESSION_KEY] = BACKEND
        self.person_read = rows[0].user
        return data
