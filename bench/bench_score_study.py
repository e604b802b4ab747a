"""Scoring a whole study: one in-process run against chunks on 1 and 2 Celery workers.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_score_study.py [--full]``.
The study is CLIP-CC-Bench's (public, ``shared/datasets/clip-cc-bench``): 6 models' paragraphs
as captions, the ground-truth paragraph as each clip's reference, every verdict final (60 %
accepted, but never a caption stuck in a repetition loop; a rejected overview is corrected to
the ground truth with its first sentence dropped), windows cut from each caption's sentences.
``--full`` is paper size (6 models x 200 clips, 8 windows); the default takes 2 clips and 3
windows and leaves METEOR out of the study job (its own measure below still runs), so that
`make bench` stays reasonable on two cores.
Built in bulk in a scratch PostgreSQL database (redline_bench_score) and ANALYZEd.

Measured, for every non-LLM metric of Table 1 (edit size, BLEU-1..4, METEOR, ROUGE-L, CIDEr-D;
CosPar, CosSen, fine P/R/F1, HM-CF per judge) over every reference set (imported, approved,
gold, matched): the wall time of an in-process run (one chunk per unit, as a single task would
do it) and with the default chunks, taken in turns (``--repeats``; the median turn), so the
overhead of chunking; then the same job on 1 and on 2 workers (real ``celery worker``
processes, Redis on ``CELERY_BROKER_URL``, default DB 9);
CPU seconds per item per family (the worker's Python; METEOR's and PTB's JVMs are separate
processes and are not in it); the re-scoring after one new final verdict (its clip job);
METEOR over CLIP-CC-Bench's paragraphs (every 4th, all 3,383 with ``--full``); the shared cache
of METEOR's pair statistics and judges' vectors is emptied before each timed run.
LLMFactsF1: with ``--base-url`` (an OpenAI-compatible server, e.g. vLLM on a GPU machine) the
bench scores ``--llm-items`` overviews there; without one, see bench_llmfacts.py (SmolLM2).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import DATASETS, HOST, REPO

DATABASE = "redline_bench_score"
FULL = {"clips": 200, "windows": 8}
DEFAULT = {"clips": 2, "windows": 3}
MODELS = 6
TARGETS = {"2 workers (paper size)": "under 10 min", "METEOR, 3,383 paragraphs": "under 5 min",
           "one new final verdict": "under 10 s of worker time", "chunking overhead": "< 10 %"}


def pg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text) if part.strip()]


#: Longer than any of CLIP-CC-Bench's human references (at most 1,011 words) by half again: such a
#: caption is a model stuck repeating itself (two of the six models write 4,000-word loops).
LOOP_WORDS = 1_500


def stuck_in_a_loop(text: str) -> bool:
    """Nobody accepts a caption stuck in a repetition loop: the bench rejects and corrects it."""
    return len(text.split()) > LOOP_WORDS


def build(root, clips: int, windows: int):
    """The study, in bulk; returns it and one caption left without a final verdict."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone
    from scalebuild import analyze, submit_in_bulk

    from annotation.models import Annotation, Caption, Clip, CorrectionPass
    from annotation.services.captions import captions_import_jsonl, references_import
    from annotation.services.studies import membership_grant, study_create
    from annotation.services.workflow import annotations_assign

    truth = {row["id"]: row["summary"] for row in
             json.loads((root / "data/ground_truth/clip_cc_dataset.json").read_text())}
    outputs = {path.stem: json.loads(path.read_text())
               for path in sorted((root / "data/models").glob("*.json"))[:MODELS]}
    chosen = [clip for clip in truth if all(clip in out for out in outputs.values())][:clips]
    study = study_create(slug="score-bench", name="scoring bench")
    Clip.objects.bulk_create([
        Clip(study=study, name=clip, original_filename=f"{clip}.mp4", size_bytes=1,
             sha256=f"{n:064x}", duration=float(windows * 2), fps=25, width=160, height=120,
             codec="h264") for n, clip in enumerate(chosen)])
    records = []
    for model, out in outputs.items():
        for clip in chosen:
            parts = sentences(out[clip]) or [out[clip]]
            records.append({"clip": clip, "model": model, "overview": out[clip], "windows": [
                {"start": 2 * w, "end": 2 * w + 2, "scene": parts[w % len(parts)],
                 "shot": "Medium shot."} for w in range(windows)]})
    captions_import_jsonl(study=study, data="\n".join(map(json.dumps, records)).encode())
    references_import(study=study, data="\n".join(
        json.dumps({"clip": clip, "text": truth[clip]}) for clip in chosen).encode())
    User = get_user_model()
    # One annotator per model: nobody annotates two captions of one clip.
    annotators = [User.objects.create(username=f"bench-annotator-{n}") for n in range(MODELS)]
    reviewer = User.objects.create(username="bench-reviewer")
    for annotator in annotators:
        membership_grant(study=study, user=annotator, role="annotator")
    membership_grant(study=study, user=reviewer, role="reviewer")
    annotations_assign(study=study, annotators=annotators,
                       captions=Caption.objects.filter(clip__study=study).order_by("pk"))
    submit_in_bulk(study, share=1.0, seed=0)
    last = Annotation.objects.filter(caption__clip__study=study).order_by("-pk").first()
    now = timezone.now()
    with transaction.atomic():
        final = Annotation.objects.filter(caption__clip__study=study).exclude(pk=last.pk)
        final.update(state="in_review", reviewer=reviewer, claim_expires_at=now)
        final.update(state="approved", reviewed_at=now, claim_expires_at=None)
        for correction in CorrectionPass.objects.filter(
            annotation__caption__clip__study=study
        ).select_related("annotation__caption__clip"):
            caption = correction.annotation.caption
            if correction.overview_verdict == "accept" and not stuck_in_a_loop(caption.overview):
                continue
            parts = sentences(truth[caption.clip.name])
            correction.overview_verdict = "reject"
            correction.overview_modes = correction.overview_modes or ["factual"]
            correction.overview_text = " ".join(parts[1:] or parts)
            correction.save(update_fields=["overview_verdict", "overview_modes", "overview_text"])
    analyze()
    return study, last, reviewer


def approve_last(annotation, reviewer) -> None:
    from django.utils import timezone

    from annotation.models import Annotation

    rows = Annotation.objects.filter(pk=annotation.pk)
    rows.update(state="in_review", reviewer=reviewer, claim_expires_at=timezone.now())
    rows.update(state="approved", reviewed_at=timezone.now(), claim_expires_at=None)


def job_for(study, metrics, judges, **extra):
    from scoring.services import score_job_create

    return score_job_create(study=study, metrics=metrics, judges=judges, enqueue=False, **extra)


def run_here(job) -> float:
    from scoring.services import score_job_run

    started = time.perf_counter()
    score_job_run(job_id=job.pk, on_progress=lambda progress: None)
    job.refresh_from_db()
    assert job.status == "done", job.errors
    return time.perf_counter() - started


def on_workers(study, metrics, judges, count: int, env: dict) -> tuple[float, object]:
    """The job on ``count`` fresh workers, timed from sending to done (models load inside), each
    with ``cores / count`` model threads (OMP_NUM_THREADS) and METEOR JVMs (METEOR_JVMS)."""
    from scoring.models import ScoreJob
    from scoring.services import score_job_enqueue

    job = fresh_job(study, metrics, judges)
    # Each worker gets its share of the cores: its model threads and METEOR JVMs (several
    # workers each taking every core slow each other down).
    share = str(max(1, (os.cpu_count() or 1) // count))
    shared = {**env, "OMP_NUM_THREADS": share, "METEOR_JVMS": share}
    workers = [subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO, env=shared) for _ in range(count)]
    try:
        started = time.perf_counter()
        score_job_enqueue(job_id=job.pk)
        while not ScoreJob.objects.get(pk=job.pk).finished:
            if any(worker.poll() is not None for worker in workers):
                raise RuntimeError("a worker died")
            time.sleep(0.5)
        wall = time.perf_counter() - started
        job.refresh_from_db()
        assert job.status == "done", job.errors
        return wall, job
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)


def per_family(job) -> dict[str, tuple[int, float, float]]:
    """family -> (items, worker CPU seconds, chunk wall seconds)."""
    found: dict[str, list[float]] = {}
    for chunk in job.chunks.all():
        entry = found.setdefault(chunk.family, [0, 0.0, 0.0])
        entry[0] += chunk.item_count
        entry[1] += chunk.cpu_seconds
        entry[2] += (chunk.finished_at - chunk.started_at).total_seconds()
    return {family: (int(a), b, c) for family, (a, b, c) in found.items()}


def forget_caches() -> None:
    """Empty what scoring remembers (the shared cache, this process's pairs and vectors), so that
    a timed run computes everything, as on a study scored for the first time."""
    from scoring.metrics import embeddings, reference
    from scoring.shared_cache import shared_cache_clear

    shared_cache_clear()
    reference.forget_pairs()
    embeddings.forget_vectors()


def fresh_job(study, metrics, judges):
    """A job on the study as if it had never been scored: no stored scores, nothing cached."""
    from scoring.models import ScoreResult

    ScoreResult.objects.filter(study=study).delete()
    forget_caches()
    return job_for(study, metrics, judges)


def paper_work(job, size: dict) -> float:
    """Seconds of chunk time the paper-size study would take in one process, scaled from
    ``job``'s chunks: items of windows by clips x windows, the others by clips."""
    clips = FULL["clips"] / size["clips"]
    windows = clips * FULL["windows"] / size["windows"]
    return sum((chunk.finished_at - chunk.started_at).total_seconds()
               * (windows if chunk.group == "windows" else clips)
               for chunk in job.chunks.all())


def distinct_overviews_per_clip(study) -> float:
    """The distinct whole-caption texts a judge embeds per clip: the models' overviews, the
    corrected ones and the references (the windows' texts are sentences, cheap to embed)."""
    from annotation.models import Caption, Clip, CorrectionPass, Reference

    texts = set(Caption.objects.filter(clip__study=study).values_list("overview", flat=True))
    texts |= set(CorrectionPass.objects.filter(annotation__caption__clip__study=study)
                 .exclude(overview_text="").values_list("overview_text", flat=True))
    texts |= set(Reference.objects.filter(clip__study=study).values_list("text", flat=True))
    return len(texts) / max(1, Clip.objects.filter(study=study).count())


def bench_judges(root, judges: list[str], per_clip: float) -> None:
    """Each judge's own cost per text on this machine, whole paragraphs and single sentences,
    and what the paper-size study's paragraphs alone cost it (they dominate: e5-small embeds a
    text longer than its 512 tokens window by window rather than cutting it)."""
    from scoring.metrics import embeddings
    from scoring.metrics.sentences import sentences as split

    truth = json.loads((root / "data/ground_truth/clip_cc_dataset.json").read_text())
    paragraphs = [row["summary"] for row in truth[:40]]
    lines = [line for paragraph in paragraphs for line in split(paragraph)][:400]
    paragraphs_total = per_clip * FULL["clips"]
    for name in judges:
        encode = embeddings.raw_encoder(name)  # the model the runs above loaded
        encode(paragraphs[:2])
        timed = {}
        for kind, texts in (("paragraph", paragraphs), ("sentence", lines)):
            started = time.perf_counter()
            encode(list(texts))
            timed[kind] = (time.perf_counter() - started) / len(texts)
        print(f"  judge {name:10s} {timed['paragraph'] * 1000:7.1f} ms per paragraph, "
              f"{timed['sentence'] * 1000:5.1f} ms per sentence; the paper-size study's "
              f"{paragraphs_total:,.0f} distinct paragraphs ({per_clip:.1f} per clip) take it "
              f"{timed['paragraph'] * paragraphs_total / 60:.1f} min on this machine")


def bench_meteor(root, full: bool, every: int) -> None:
    """METEOR over CLIP-CC-Bench's paragraphs: all of them with ``full``, else every
    ``every``-th (their cost is heavy-tailed: repetition loops of 4,000 words take seconds each,
    so a systematic sample, not the first few, is what extrapolates)."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_scoring import load_corpus

    from scoring.metrics import reference
    from scoring.metrics.reference import close_meteor_jvms, default_meteor_workers, reference_scores

    items = load_corpus(root)
    sample = items if full else items[::every]
    workers = default_meteor_workers()
    close_meteor_jvms()
    reference.forget_pairs()
    started = time.perf_counter()
    reference.start_meteor_jvms(workers)
    start = time.perf_counter() - started
    started = time.perf_counter()
    reference_scores({i.key: i.candidate for i in sample}, {i.key: [i.reference] for i in sample},
                     metrics=["meteor"])
    wall = time.perf_counter() - started
    close_meteor_jvms()
    scale = len(items) / len(sample)
    total = wall * scale + start
    print(f"METEOR over {len(sample):,} CLIP-CC-Bench paragraphs ({workers} JVMs, started in "
          f"{start:.1f} s): {wall:.1f} s, {wall / len(sample) * 1000:.0f} ms per paragraph; for "
          f"all {len(items):,} with the start: {total / 60:.1f} min"
          f"{' (measured)' if full else f' (extrapolated from every {every}th)'}; "
          f"target under 5 min")


def bench_llmfacts(study, base_url: str, model: str, items: int) -> None:
    from django.conf import settings

    from scoring.models import ScoreChunk

    settings.LLMFACTS_BASE_URL, settings.LLMFACTS_MODEL = base_url, model
    settings.SCORING_STUDY_CHUNK_ITEMS = {**settings.SCORING_STUDY_CHUNK_ITEMS, "llmfacts": items}
    job = job_for(study, ["llmfacts_f1"], [])
    wall = run_here(job)
    first = ScoreChunk.objects.filter(job=job).order_by("index").first()
    count = sum(chunk.item_count for chunk in job.chunks.all())
    print(f"LLMFactsF1 on {base_url} ({model}): {count} items in {wall:.1f} s, "
          f"{wall / max(1, count):.2f} s per item (first chunk {first.item_count if first else 0})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="paper size: 6 models x 200 clips")
    parser.add_argument("--clips", type=int, help="clips instead (a quick try)")
    parser.add_argument("--base-url", default="", help="OpenAI-compatible server for LLMFactsF1")
    parser.add_argument("--llm-model", default="", help="its model name")
    parser.add_argument("--llm-items", type=int, default=40)
    parser.add_argument("--without", default=None,
                        help="metrics to leave out (default: meteor, none with --full)")
    parser.add_argument("--meteor-every", type=int, default=4,
                        help="without --full, METEOR is measured over every n-th paragraph (4; "
                        "their cost is heavy-tailed, so fewer extrapolate badly)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="in-process runs of each kind, taken in turns; the median turn is kept (3)")
    args = parser.parse_args(argv)
    size = dict(FULL if args.full else DEFAULT)
    if args.clips:
        size["clips"] = args.clips
    root = DATASETS / "clip-cc-bench"
    if not (root / "data/models").is_dir():
        print(f"score-study bench: skipped, no CLIP-CC-Bench under {DATASETS}")
        return 0
    if not shutil.which("createdb") or pg("pg_isready", "-h", HOST, "-q").returncode != 0:
        print(f"score-study bench: skipped, no PostgreSQL on {HOST}")
        return 0
    if not shutil.which("java"):
        print("score-study bench: skipped, METEOR and PTB need Java")
        return 0
    pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
    created = pg("createdb", "-h", HOST, DATABASE)
    if created.returncode != 0:
        print(f"score-study bench: skipped, cannot create {DATABASE}: {created.stderr.strip()}")
        return 0
    scratch = tempfile.mkdtemp(prefix="redline-bench-score-")
    broker = os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/9"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{getpass.getuser()}@{HOST}:5432/{DATABASE}",
        "MEDIA_ROOT": scratch, "DJANGO_SETTINGS_MODULE": "config.settings",
        "SCORING_ON_FINAL_VERDICT": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "CELERY_BROKER_URL": broker, "CELERY_TASK_ALWAYS_EAGER": "0", "JOB_RUNNER": "celery",
        "LOG_LEVEL": "ERROR",
    }
    os.environ.update(env)
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        from config.celery import app
        from scoring.families import default_judges
        from scoring.metrics.registry import METRICS

        call_command("migrate", verbosity=0)
        app.control.purge()
        started = time.perf_counter()
        study, last, reviewer = build(root, **size)
        from annotation.models import Caption

        captions = Caption.objects.filter(clip__study=study).count()
        print(f"built {MODELS} models x {size['clips']} clips x {size['windows']} windows "
              f"({captions} captions, all but one verdict final) in "
              f"{time.perf_counter() - started:.1f} s"
              f"{'' if args.full else ' (--full: 200 clips x 8 windows, paper size)'}")
        without = args.without if args.without is not None else ("" if args.full else "meteor")
        left_out = set(filter(None, without.split(",")))
        metrics = [name for name, metric in METRICS.items()
                   if metric.family != "llmfacts" and name not in left_out]
        if left_out:
            print(f"left out: {', '.join(sorted(left_out))}")
        judges = default_judges()

        # One chunk per unit (as one task walking every unit), then the default chunks.
        default_sizes = dict(settings.SCORING_STUDY_CHUNK_ITEMS)
        settings.SCORING_STUDY_CHUNK_ITEMS = {name: 10**9 for name in default_sizes}
        warm = job_for(study, metrics, judges)
        warm_wall = run_here(warm)  # loads the judges and starts the JVMs once
        items = warm.progress_total
        # Taken in turns, each chunked run against the one-chunk run just before it, and the
        # median turn kept: a half-minute run on this machine varies by more than the overhead.
        singles, chunkeds = [], []
        for _ in range(args.repeats):
            settings.SCORING_STUDY_CHUNK_ITEMS = {name: 10**9 for name in default_sizes}
            singles.append(run_here(fresh_job(study, metrics, judges)))
            settings.SCORING_STUDY_CHUNK_ITEMS = default_sizes
            chunked_job = fresh_job(study, metrics, judges)
            chunkeds.append(run_here(chunked_job))
        pairs = list(zip(singles, chunkeds, strict=True))
        ratio = statistics.median(chunked / single for single, chunked in pairs)
        turns = ", ".join(f"{single:.1f} s / {chunked:.1f} s" for single, chunked in pairs)
        print(f"{items:,} items x their metrics; in one process: first run {warm_wall:.1f} s "
              f"(models load, JVMs start); one chunk per unit / {chunked_job.chunks_total} chunks, "
              f"{args.repeats} turns: {turns}: chunking overhead {(ratio - 1) * 100:+.1f} % "
              f"(the median turn; target < 10 %)")
        for family, (count, cpu, wall) in sorted(per_family(chunked_job).items()):
            print(f"  {family:10s} {count:6,} items  {cpu / max(1, count) * 1000:8.2f} ms CPU "
                  f"per item (worker Python)  {wall / max(1, count) * 1000:8.2f} ms wall per item")

        one, _ = on_workers(study, metrics, judges, 1, env)
        two, job2 = on_workers(study, metrics, judges, 2, env)
        print(f"on workers (each loads its judges and starts its JVMs): 1 worker {one:.1f} s, "
              f"2 workers {two:.1f} s: {one / two:.2f}x; "
              f"{len(set(job2.chunks.values_list('worker', flat=True)))} workers took chunks")
        if not args.full:
            work = paper_work(chunked_job, size)
            cores = os.cpu_count() or 1
            print(f"  paper size, from the chunks' wall time per item (window items scaled by "
                  f"clips x windows, the others by clips): {work / 60:.1f} min of work in one "
                  f"process; on {cores} cores, perfectly shared, at best "
                  f"{work / cores / 60:.1f} min (target under 10 min)")
        bench_judges(root, judges, distinct_overviews_per_clip(study))

        unchanged = job_for(study, metrics, judges)
        run_here(unchanged)
        print(f"a second job on the unchanged study: {unchanged.progress_total} items")
        approve_last(last, reviewer)
        clip_job = job_for(study, metrics, judges, clip=last.caption.clip)
        wall = run_here(clip_job)
        worker_time = sum(w for _, _, w in per_family(clip_job).values())
        print(f"one new final verdict: its clip job scores {clip_job.progress_total} items in "
              f"{clip_job.chunks_total} chunks, {wall:.2f} s in all ({worker_time:.2f} s in "
              f"chunks; target under 10 s of worker time)")
        bench_meteor(root, args.full, args.meteor_every)
        if args.base_url:
            bench_llmfacts(study, args.base_url, args.llm_model, args.llm_items)
        else:
            print("LLMFactsF1: pass --base-url (and --llm-model) to measure a server here; on "
                  "this machine bench_llmfacts.py reports the SmolLM2 figure")
    finally:
        from django.db import connections

        connections.close_all()
        pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
