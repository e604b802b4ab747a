"""Find jobs whose process died (scoring, profile exports, clip media, caption imports) and resume
or fail them."""

from django.core.management.base import BaseCommand

from scoring.jobs_recovery import jobs_recover


class Command(BaseCommand):
    help = (
        "Send again the jobs whose worker or web process died while they ran, or mark them "
        "failed once they have stalled JOB_MAX_ATTEMPTS times. Workers do this when they start."
    )

    def handle(self, *args, **options):
        for kind, report in jobs_recover().items():
            self.stdout.write(
                f"{kind}: {len(report['resumed'])} sent again {report['resumed'] or ''}, "
                f"{len(report['failed'])} failed {report['failed'] or ''}".replace(" ,", ",")
            )
