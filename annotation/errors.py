"""Errors that Redline's rules and services raise; each message is meant to be shown to a person as
it is. At the bottom of the annotation app: it imports nothing of it, so anything may import it
(the services that write, the queues that read, the API that answers)."""

from __future__ import annotations

from collections.abc import Sequence


class ServiceError(Exception):
    """A request that Redline refuses, with a message that says why."""


class TaxonomyFrozen(ServiceError):
    """The taxonomy version is in use and can no longer change."""


class DuplicateClip(ServiceError):
    """The same video (by sha256) or clip name is already in the study."""


class ImportRefused(ServiceError):
    """An all-or-nothing import found errors; nothing was stored."""

    def __init__(self, errors: Sequence[object]):
        self.errors = [str(error) for error in errors]
        count = len(self.errors)
        super().__init__(
            f"{count} error{'s' if count != 1 else ''}, nothing was stored:\n"
            + "\n".join(self.errors)
        )


class FieldErrors(ServiceError):
    """Values refused field by field: {field: a sentence naming the problem}."""

    def __init__(self, errors: dict[str, str]):
        self.errors = dict(errors)
        super().__init__(" ".join(f"{field}: {message}" for field, message in self.errors.items()))


class StudyStateRefused(Exception):
    """A write that the study's state does not allow (annotation.services.study_state); the
    message names the study and its state.

    Not a ServiceError on purpose: views that answer a ServiceError with 400 let it pass, and one
    place answers it on every path, 409 (annotation.middleware.AnswerWhenAServiceFails); on the
    command line manage.py prints it."""

    def __init__(self, message: str, *, state: str):
        super().__init__(message)
        self.state = state
