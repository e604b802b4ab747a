"""Import throughput: the 3,383 CLIP-CC-Bench model paragraphs as overview-only captions.

Run with `make bench`. Uses a throwaway SQLite database (or DATABASE_URL when set:
point it at a scratch PostgreSQL database, never a real one). Needs the public
datasets folder (REDLINE_DATASETS, default ../shared/datasets); skips when absent.
Target (issue 12): all 3,383 paragraphs in under 1 s on 2 cores, as one import of the folder
of model files; one file per import (as the API takes them) is printed beside it.
`--profile` prints where the time of one whole import goes.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from benchlib import DATASETS

MODELS = DATASETS / "clip-cc-bench" / "data" / "models"
TARGET_SECONDS = 1.0
RUNS = 5


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

    from annotation.interchange import formats
    from annotation.models import Caption, Clip
    from annotation.services.captions import (
        captions_import_clip_cc_files,
        captions_store,
        study_caption_pairs,
        study_clip_durations,
    )
    from annotation.services.studies import study_create

    call_command("migrate", verbosity=0)

    def new_study(name: str):
        study = study_create(slug=f"bench-{os.getpid()}-{name}", name="import bench")
        # Clip rows stand in for the 90-second movie clips, whose videos are not public here.
        Clip.objects.bulk_create(
            Clip(study=study, name=f"{n:03d}", original=f"bench/{n:03d}.mp4", original_filename=f"{n:03d}.mp4",
                 size_bytes=1, sha256=f"{n:064d}", duration=90.0, fps=25, width=640, height=360, codec="h264")
            for n in range(1, 201)
        )
        return study

    files = sorted(MODELS.glob("*.json"))
    contents = {path.stem: path.read_bytes() for path in files}

    def one_file_at_a_time(study) -> tuple[float, float]:
        """As the API takes them: one model file per request, each its own transaction."""
        parse_seconds = store_seconds = 0.0
        for model, data in contents.items():
            started = time.perf_counter()
            result = formats.parse_clip_cc_model_file(
                data, model=model,
                clip_durations=study_clip_durations(study), existing_pairs=study_caption_pairs(study),
            )
            parsed = time.perf_counter()
            captions_store(study=study, result=result, keep_invalid=False)
            store_seconds += time.perf_counter() - parsed
            parse_seconds += parsed - started
        return parse_seconds, store_seconds

    def all_files_at_once(study) -> float:
        """As `import_captions --format clip-cc` takes a folder: one validation, one transaction."""
        started = time.perf_counter()
        captions_import_clip_cc_files(study=study, files=contents)
        return time.perf_counter() - started

    per_file, whole = [], []
    for run in range(RUNS):
        parse_seconds, store_seconds = one_file_at_a_time(new_study(f"files-{run}"))
        per_file.append((parse_seconds, store_seconds))
        study = new_study(f"whole-{run}")
        whole.append(all_files_at_once(study))
    count = Caption.objects.filter(clip__study=study).count()
    database = os.environ["DATABASE_URL"].split(":")[0]
    print(f"captions imported: {count} from {len(files)} model files ({database}), {RUNS} runs, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    median = statistics.median(whole)
    print(f"  all files in one import: median {median:.2f} s (min {min(whole):.2f}, max {max(whole):.2f}); "
          f"{count / median:,.0f} captions/s; target < {TARGET_SECONDS:.0f} s "
          f"-> {median / TARGET_SECONDS:.2f}x of the budget")
    parse_median = statistics.median(p for p, _ in per_file)
    store_median = statistics.median(s for _, s in per_file)
    print(f"  one file per import ({len(files)} transactions): parse+validate {parse_median:.2f} s, "
          f"store {store_median:.2f} s, total {parse_median + store_median:.2f} s (medians)")
    if "--profile" in sys.argv:  # where the time of one whole import goes, by function
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        study = new_study("profiled")
        profiler.runcall(lambda: all_files_at_once(study))
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
