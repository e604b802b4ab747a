"""What a study's state allows: the one rule that every service writing to a study asks.

A study moves setup -> running -> closed -> archived (annotation.services.lifecycle). What may be
written to it depends on where it stands, and only on that:

- **setup**: everything but work (annotating and reviewing open when the study starts) and
  recruitment (participants join through its links only while it runs); gold items may be named
  and the practice set chosen, but gold verdicts are made in the workspace, which opens when the
  study runs;
- **running**: everything but the frozen settings (taxonomy, thresholds, assignment design:
  ``lifecycle.FROZEN_FIELDS``);
- **closed**: nothing but reading, exporting, the data release, archiving and a member's
  withdrawal (ethics: a withdrawal is honoured whenever it comes; its erasure too, the database
  letting the erasure alone through, migration 0033);
- **archived**: reading, exporting and a member's withdrawal, which excludes their work from
  every export from then on; no erasure (the archive is the study's record, as released).

Each service names the kind of write it makes (:class:`Write`) and calls :func:`study_require`
before writing. A refusal is a :class:`StudyStateRefused` whose sentence names the study and its
state; the API and the pages translate it to 409 in one place (annotation.middleware), so the
answer is the same on every path. The database refuses the rows of a closed or archived study
as well (migration 0026), for a path that forgets to ask.

Moving the study itself (start, close, archive) is lifecycle's, with its own order of moves.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from annotation.errors import StudyStateRefused
from annotation.models import Study, StudyState


class Write(StrEnum):
    """The kinds of write a service makes to a study, for the rule below."""

    SETTINGS = "settings"  # name, description, undo seconds, overlap share
    FROZEN_SETTINGS = "frozen settings"  # lifecycle.FROZEN_FIELDS
    CONTENT = "content"  # clips and their properties, models, captions, references
    MEMBERS = "members"  # memberships and invitations (made, revoked, accepted)
    ASSIGN = "assign"  # giving captions to annotators
    WORK = "work"  # annotating and reviewing
    GOLD = "gold"  # gold items, the practice set and its rule, qualification decisions (annotation.services.gold)
    RECRUIT = "recruit"  # a participant joining through a recruitment link (an account, a member, work)
    SCORING = "scoring"  # score jobs (started, cancelled) and imported external scores
    EXPORT = "export"  # profile exports and the data release: files, the study's rows unchanged
    WITHDRAW = "withdraw"  # a member withdrawing: their claims released, their work excluded
    ERASE = "erase"  # the content of a withdrawn member's annotations erased


# The rule, in one table: what each state allows.
ALLOWED: dict[str, frozenset[Write]] = {
    StudyState.SETUP: frozenset(Write) - {Write.WORK, Write.RECRUIT},
    StudyState.RUNNING: frozenset(Write) - {Write.FROZEN_SETTINGS},
    StudyState.CLOSED: frozenset({Write.EXPORT, Write.WITHDRAW, Write.ERASE}),
    StudyState.ARCHIVED: frozenset({Write.EXPORT, Write.WITHDRAW}),
}

# What a closed or archived study still allows, in the words of the refusal.
STILL_ALLOWED = {
    StudyState.CLOSED: "it can be read, exported, released and archived",
    StudyState.ARCHIVED: "it can be read and exported",
}


def study_allows(study: Study, write: Write) -> bool:
    return write in ALLOWED[study.state]


def refusal_message(study: Study, write: Write, frozen: Iterable[str] = ()) -> str:
    """The sentence every path answers when `study`'s state refuses `write`. `frozen` names the
    frozen settings a running study was asked to change."""
    if study.state == StudyState.SETUP:
        return f"Study {study.name} is being set up: work opens when its admin starts it."
    if study.state == StudyState.RUNNING:
        names = list(frozen) or ["taxonomy, thresholds and assignment design"]
        return (f"Study {study.name} is running: its {', '.join(names)} "
                f"{'are' if len(names) > 1 or not frozen else 'is'} frozen (only a study in setup may "
                "change them).")
    return f"Study {study.name} is {study.get_state_display()}: {STILL_ALLOWED[study.state]}; nothing in it changes."


def study_require(study: Study, write: Write, *, frozen: Iterable[str] = ()) -> None:
    """Refuse (StudyStateRefused, naming the state) a write that the study's state does not allow."""
    if not study_allows(study, write):
        raise StudyStateRefused(refusal_message(study, write, frozen), state=study.state)
