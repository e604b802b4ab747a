"""Profile exports made by writing their folders as a finished, failed or waiting export leaves
them, for the tests of listing and deleting (no export runs)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from scoring import profile_jobs

OPTIONS = {"resamples": 30, "adjusted_resamples": 10, "seed": 1, "paired_only": False}


def an_export(study, *, state: str, created_at: str, final: bool = False) -> str:
    """An export in ``state``, asked for at ``created_at``; return its id. A done one has a
    report, listed in its manifest, and a zip; a failed one its error. Its status was written
    just now, so recovery leaves a queued or running one alone."""
    job = uuid.uuid4().hex
    folder = profile_jobs.job_dir(study, job)
    folder.mkdir(parents=True)
    status = {
        "job": job, "study": study.slug, "state": state, "done": 0, "total": profile_jobs.export_steps(),
        "step": state, "error": "", "requested_by": "researcher", "options": OPTIONS,
        "created_at": created_at, "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "started_at": None, "finished_at": None, "final": final,
    }
    if state == profile_jobs.DONE:
        (folder / "files").mkdir()
        (folder / "files" / "report.html").write_text("<h1>Failure profile</h1>")
        (folder / "profile.zip").write_bytes(b"PK")
        status.update(files=["report.html"], zip="profile.zip", finished_at=created_at, done=status["total"],
                      manifest={"report": "report.html", "tables": [], "figures": []})
    elif state == profile_jobs.FAILED:
        status.update(error="The study has no final verdicts.", finished_at=created_at)
    (folder / "status.json").write_text(json.dumps(status))
    return job
