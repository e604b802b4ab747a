import time

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ServiceError
from annotation.management.commands._study import get_study
from scoring.models import ScoreJob
from scoring.services import Progress, score_job_create, score_job_run


class Command(BaseCommand):
    help = (
        "Score a whole study: every final verdict (original vs final, overview and windows) and "
        "every caption against its clip's references. Without a broker the job runs here, "
        "printing progress; with one it is queued for the workers, and --wait follows it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--metrics", help="comma-separated metric names (default: all)")
        parser.add_argument("--judges", help="comma-separated judges for embedding metrics")
        parser.add_argument(
            "--splitter", default="punkt", choices=["punkt", "redline"],
            help="sentence splitter of fine, HM-CF and CosSen: punkt (NLTK's, the benchmarks', "
            "default) or redline (ours: also splits at line breaks and glued sentences)")
        parser.add_argument("--wait", action="store_true", help="follow a queued job to its end")
        parser.add_argument(
            "--poll", type=float, default=1.0, help="seconds between progress checks with --wait"
        )

    def handle(self, *args, study, metrics, judges, splitter, wait, poll, **options):
        from scoring.tasks import run_score_job

        study = get_study(study)
        split = lambda text: [part.strip() for part in (text or "").split(",") if part.strip()]  # noqa: E731
        eager = run_score_job.app.conf.task_always_eager
        try:
            job = score_job_create(
                study=study,
                metrics=split(metrics) or None,
                judges=split(judges) or None,
                splitter=splitter,
                enqueue=not eager,
            )
        except ServiceError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"Scoring job #{job.pk} for {study.slug}: {', '.join(job.metrics)}"
            + (f" (judges: {', '.join(job.judges)})" if job.judges else "")
        )
        if eager:
            # No broker: run it here, so that its progress can be shown as it happens.
            self.stdout.write("No broker configured: running in this process.")
            score_job_run(job_id=job.pk, on_progress=self.show)
        elif wait:
            self.follow(job, poll)
        else:
            self.stdout.write("Queued. `--wait` follows it; the study page shows the job table.")
            return
        self.report(ScoreJob.objects.get(pk=job.pk))

    def show(self, progress: Progress) -> None:
        percent = 100 * progress.done / progress.total if progress.total else 100
        self.stdout.write(f"  {progress.done}/{progress.total} ({percent:.0f}%) {progress.step}")

    def follow(self, job: ScoreJob, poll: float) -> None:
        last = None
        while True:
            job.refresh_from_db()
            state = (job.status, job.progress_done, job.progress_total)
            if state != last:
                last = state
                percent = 100 * job.progress_done / job.progress_total if job.progress_total else 0
                self.stdout.write(
                    f"  {job.status}: {job.progress_done}/{job.progress_total} ({percent:.0f}%)"
                )
            if job.finished:
                return
            time.sleep(poll)

    def report(self, job: ScoreJob) -> None:
        for key, message in job.errors.items():
            self.stderr.write(f"  failed {key}: {message}")
        summary = f"Job #{job.pk} {job.status}: {job.results.count()} result(s) stored."
        if job.status != ScoreJob.Status.DONE:
            raise CommandError(summary)
        self.stdout.write(summary)
