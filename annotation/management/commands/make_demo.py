from django.core.management.base import BaseCommand

from annotation.models import Caption
from annotation.services.demo import DEMO_ANNOTATORS, demo_build


class Command(BaseCommand):
    help = "Build the demo study (slug 'demo') and its accounts, offline; safe to run again."

    def handle(self, *args, **options):
        report = demo_build(progress=lambda message: self.stdout.write(f"  {message}"))
        study = report.study
        self.stdout.write(
            f"Demo study {study.slug!r}: {study.clips.count()} clips, "
            f"{study.candidate_models.count()} models, "
            f"{Caption.objects.filter(clip__study=study).count()} captions "
            f"(added {report.clips_added} clips, {report.captions_added} captions, "
            f"{report.references_added} references; {report.assigned} captions assigned, one model per clip to each of "
            f"{', '.join(DEMO_ANNOTATORS)})."
        )
        self.stdout.write("Demo accounts:")
        for username, password, roles in report.accounts:
            shown = password or "(already existed; password unchanged)"
            self.stdout.write(f"  {username:<11} {shown:<14} {', '.join(roles)}")
