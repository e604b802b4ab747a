"""Import throughput: the 3,383 CLIP-CC-Bench model paragraphs as overview-only captions.

Run with `make bench`. Uses a throwaway SQLite database (or DATABASE_URL when set:
point it at a scratch PostgreSQL database, never a real one). Needs the public
datasets folder (REDLINE_DATASETS, default ../shared/datasets); skips when absent.
Target: all 3,383 paragraphs in under 5 s on 2 cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from benchlib import DATASETS

MODELS = DATASETS / "clip-cc-bench" / "data" / "models"
TARGET_SECONDS = 5.0


def main() -> int:
    if not MODELS.exists():
        print(f"import bench: skipped, {MODELS} not found (set REDLINE_DATASETS)")
        return 0
    scratch = tempfile.mkdtemp(prefix="redline-bench-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch}/bench.sqlite3")
    os.environ["MEDIA_ROOT"] = scratch
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation import formats
    from annotation.models import Caption, Clip
    from annotation.services.captions import captions_store, study_caption_pairs, study_clip_durations
    from annotation.services.studies import study_create

    call_command("migrate", verbosity=0)
    study = study_create(slug=f"bench-{os.getpid()}", name="import bench")
    # Clip rows stand in for the 90-second movie clips, whose videos are not public here.
    Clip.objects.bulk_create(
        Clip(study=study, name=f"{n:03d}", original=f"bench/{n:03d}.mp4", original_filename=f"{n:03d}.mp4",
             size_bytes=1, sha256=f"{n:064d}", duration=90.0, fps=25, width=640, height=360, codec="h264")
        for n in range(1, 201)
    )
    files = sorted(MODELS.glob("*.json"))
    parse_seconds = store_seconds = 0.0
    for path in files:
        started = time.perf_counter()
        result = formats.parse_clip_cc_model_file(
            path.read_bytes(), model=path.stem,
            clip_durations=study_clip_durations(study), existing_pairs=study_caption_pairs(study),
        )
        parsed = time.perf_counter()
        captions_store(study=study, result=result, keep_invalid=False)
        store_seconds += time.perf_counter() - parsed
        parse_seconds += parsed - started
    total = parse_seconds + store_seconds
    count = Caption.objects.filter(clip__study=study).count()
    print(f"captions imported: {count} from {len(files)} model files "
          f"({os.environ['DATABASE_URL'].split(':')[0]})")
    print(f"  parse+validate {parse_seconds:.2f} s, store {store_seconds:.2f} s, total {total:.2f} s")
    print(f"  throughput {count / total:,.0f} captions/s; target < {TARGET_SECONDS:.0f} s "
          f"-> {total / TARGET_SECONDS:.2f}x of the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
