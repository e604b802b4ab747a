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
