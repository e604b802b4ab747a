"""Paying crowd participants, without Django: the bonus rate a study admin enters, the amount
it gives for a participant's active time, and the platforms' bulk-bonus file.

- **Rate**: money per hour of active time, a number above 0 and at most RATE_MAX, with at most
  two decimals (the platforms pay in cents).
- **Amount**: rate × active hours, rounded to the cent, half up (0.125 → 0.13), computed in
  decimal arithmetic from the active seconds (no float rounding on the way).
- **Bulk-bonus file** (Prolific's "bulk bonus" box and API, `csv_bonuses`): one line per
  participant, ``participant_id,amount``, the amount with two decimals, no currency sign, no
  header line. A participant whose amount rounds to 0.00 is left out (a bonus of nothing is
  refused by the platform).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

RATE_MAX = Decimal("1000")
CENT = Decimal("0.01")
SECONDS_PER_HOUR = Decimal(3600)


class RateProblem(ValueError):
    """The rate cannot be used; the message says why (for the field `rate`)."""


def parse_rate(value: object) -> Decimal:
    """The hourly rate from what the admin typed; RateProblem saying why when it is not a
    number, not above 0, over RATE_MAX or finer than a cent."""
    text = str(value if value is not None else "").strip()
    shown = text[:20]
    if not text:
        raise RateProblem("Enter the rate per hour of active time, e.g. 9.50.")
    if isinstance(value, bool):
        raise RateProblem(f"The rate is a number of money per hour, e.g. 9.50; {shown!r} is not.")
    try:
        rate = Decimal(text)
    except InvalidOperation:
        raise RateProblem(f"The rate is a number of money per hour, e.g. 9.50; {shown!r} is not.") from None
    if not rate.is_finite():
        raise RateProblem(f"The rate is a number of money per hour, e.g. 9.50; {shown!r} is not.")
    if rate <= 0:
        raise RateProblem(f"The rate must be above 0; {shown} is not.")
    if rate > RATE_MAX:
        raise RateProblem(f"The rate is at most {RATE_MAX} per hour; {shown} is more.")
    if rate != rate.quantize(CENT):
        raise RateProblem(f"The rate has at most two decimals (cents); {shown} has more.")
    return rate.quantize(CENT)


def bonus_amount(rate: Decimal, active_seconds: float) -> Decimal:
    """rate × active hours, to the cent, half up."""
    seconds = Decimal(repr(float(active_seconds))) if active_seconds else Decimal(0)
    return (rate * seconds / SECONDS_PER_HOUR).quantize(CENT, rounding=ROUND_HALF_UP)


def bonus_lines(bonuses: Iterable[tuple[str, Decimal]]) -> str:
    """The bulk-bonus file: ``participant_id,amount`` lines (amounts above 0), no header."""
    return "".join(f"{pid},{amount:.2f}\n" for pid, amount in bonuses if amount > 0)
