"""The annotation state machine, as data: which action moves which state where.

assigned -> in_progress -> submitted -> in_review -> approved
                                              \\-> returned -> in_progress -> ...
Services apply these with conditional updates, so an illegal or concurrent
transition changes no row and is refused.
"""

from __future__ import annotations

from typing import NamedTuple

ASSIGNED = "assigned"
IN_PROGRESS = "in_progress"
SUBMITTED = "submitted"
IN_REVIEW = "in_review"
APPROVED = "approved"
RETURNED = "returned"


class Transition(NamedTuple):
    sources: frozenset[str]
    target: str


TRANSITIONS: dict[str, Transition] = {
    "open": Transition(frozenset({ASSIGNED, RETURNED}), IN_PROGRESS),
    "submit": Transition(frozenset({IN_PROGRESS}), SUBMITTED),
    # An expired claim may be taken over; services check the expiry.
    "claim": Transition(frozenset({SUBMITTED, IN_REVIEW}), IN_REVIEW),
    "release": Transition(frozenset({IN_REVIEW}), SUBMITTED),
    "approve": Transition(frozenset({IN_REVIEW}), APPROVED),
    "amend": Transition(frozenset({IN_REVIEW}), APPROVED),
    "return": Transition(frozenset({IN_REVIEW}), RETURNED),
}

# Decisive actions that whoever took them may undo for a few seconds (settings.UNDO_SECONDS):
# {action: (state it left the annotation in, state the undo goes back to)}. Locking the
# overview changes no state. The database trigger allows these moves back only while the
# row's undo window is open (migrations 0010 and 0016; undoing an amendment also deletes the
# QC pass it created, which the database allows only then).
UNDOABLE: dict[str, tuple[str, str]] = {
    "lock_overview": (IN_PROGRESS, IN_PROGRESS),
    "submit": (SUBMITTED, IN_PROGRESS),
    "approve": (APPROVED, IN_REVIEW),
    "amend": (APPROVED, IN_REVIEW),
}

# States in which the annotator may still change their pass.
EDITABLE = frozenset({IN_PROGRESS})
FINAL = frozenset({APPROVED})


def transition_for(action: str, state: str) -> str:
    """The state `action` leads to from `state`; ValueError names what is allowed otherwise."""
    transition = TRANSITIONS[action]
    if state not in transition.sources:
        allowed = ", ".join(sorted(transition.sources))
        raise ValueError(f"cannot {action} an annotation that is {state.replace('_', ' ')} (only from: {allowed})")
    return transition.target
