"""The sign-in sessions, as config.sessions keeps them: Django's session table, with the signed-in
person's id in a column of its own beside the session's data, so that one statement reads both
(config.sessions, config.auth). Thin, as the other models."""

from __future__ import annotations

from importlib import import_module

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models


class SignedInSession(AbstractBaseSession):
    """A row of Django's session table (django_session, made by django.contrib.sessions), with
    `user`: the person the session signs in, as its data says, or empty for a session that signs
    nobody in or was written by Django's own store. The column is a copy that saves a read: the
    session's data still decides who is signed in (config.auth checks the two agree)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING,
                             db_constraint=False, related_name="+")

    class Meta:
        managed = False  # the table is django.contrib.sessions'; migration 0039 adds the column
        db_table = "django_session"

    @classmethod
    def get_session_store_class(cls):
        return import_module(settings.SESSION_ENGINE).SessionStore
