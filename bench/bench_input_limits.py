"""The work one request may ask for, at the input limits, and the audit trail's size per save.

1. ``/api/edit-size/`` takes texts of at most 50,000 characters (the overview limit). Its work is
   ``edits.edit_size`` plus ``edits.word_diff`` on the two texts; this times both on texts at the
   limit shaped to be hard (unrelated words, one long word, alternating short words, letters
   without spaces) and prints the slowest as a share of the 30 s a gunicorn worker may take.
2. An autosave's audit event keeps only the changed fields, texts as patches
   (``annotation.rules.audit_diff``). For a 46,000-character overview edited by one sentence, this
   prints the event's size against the whole pass stored twice (before and after), as it was.

Pure computation, no server or database: the numbers are the request's own work.
"""

from __future__ import annotations

import json
import os
import random
import time

import benchlib  # noqa: F401  (puts the repository on the import path)

from annotation.interchange.formats import MAX_OVERVIEW_CHARS
from annotation.rules.audit_diff import pass_changes
from scoring.metrics import edits

WORKER_TIMEOUT_S = 30.0


def shapes(n: int) -> dict[str, tuple[str, str]]:
    rng = random.Random(1)
    vocabulary = [f"w{i}" for i in range(3000)]

    def prose() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(n // 4))[:n]

    return {
        "unrelated words": (prose(), prose()),
        "one long word": ("x" * n, "y" * n),
        "alternating short words": (("ab " * n)[:n], ("ba " * n)[:n]),
        "letters without spaces": ("".join(chr(65 + i % 26) for i in range(n)),
                                   "".join(chr(65 + (i * 7) % 26) for i in range(n))),
    }


def bench_edit_size() -> None:
    print(f"== /api/edit-size/ at the limit ({MAX_OVERVIEW_CHARS:,} characters each side)")
    slowest = 0.0
    for name, (original, corrected) in shapes(MAX_OVERVIEW_CHARS).items():
        start = time.perf_counter()
        edits.edit_size(original, corrected, near_total_cut=0.55)
        edits.word_diff(original, corrected)
        seconds = time.perf_counter() - start
        slowest = max(slowest, seconds)
        print(f"{name:>24}: {seconds:.2f} s")
    print(f"slowest: {slowest:.2f} s = {slowest / WORKER_TIMEOUT_S:.1%} of the "
          f"{WORKER_TIMEOUT_S:.0f} s worker timeout")


def bench_audit_size() -> None:
    print("\n== Audit event of one autosave (a sentence added to a long overview)")
    text = "The counter counts up. " * 2_000

    def snapshot(overview: str) -> dict:
        return {"overview": {"verdict": "reject", "text": overview, "modes": ["factual"]},
                "windows": [], "segmentation": {"verdict": "", "modes": [], "windows": []}}

    before, after = snapshot(text), snapshot(text + "Then it stops.")
    whole = len(json.dumps([before, after]))
    changed = len(json.dumps(pass_changes(before, after)))
    print(f"overview of {len(text):,} characters: whole pass before and after {whole:,} bytes; "
          f"changed fields only {changed:,} bytes ({whole / changed:,.0f}x smaller)")


if __name__ == "__main__":
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    bench_edit_size()
    bench_audit_size()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
