from django.core.management.base import BaseCommand

from annotation.management.commands._study import get_study
from annotation.services.annotating import passes_with_overlapping_windows


class Command(BaseCommand):
    help = (
        "List the study's correction passes whose corrected windows overlap (stored before "
        "overlaps were refused), so they can be returned to their annotators to retime."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")

    def handle(self, *args, study, **options):
        found = get_study(study)
        passes = passes_with_overlapping_windows(study=found)
        for item in passes:
            self.stdout.write(
                f"annotation {item['annotation']} ({item['state']}, annotator {item['annotator']}, "
                f"{item['kind']} pass): {item['problem']} Review: /review/{item['annotation']}/"
            )
        if passes:
            self.stdout.write(
                f"{len(passes)} passes of study {found.slug!r} have overlapping windows: "
                "the annotator sees the overlap in the workspace; return submitted ones from their review page."
            )
        else:
            self.stdout.write(f"No pass of study {found.slug!r} has overlapping windows.")
