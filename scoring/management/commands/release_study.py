from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from scoring.release import LICENSES, MODEL_NAMING, ReleaseError, release_build


class Command(BaseCommand):
    help = (
        "Write a study's data release: the corrected captions as Parquet and JSON Lines (one row per "
        "caption, one per window) and a dataset card (README.md), annotators and reviewers as pseudonyms."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--out", required=True, help="the folder to write (created if needed)")
        parser.add_argument("--license", default="CC-BY-4.0", choices=LICENSES,
                            help="the dataset's license, written in the card (default CC-BY-4.0)")
        parser.add_argument("--models", default="alias", choices=MODEL_NAMING,
                            help="name the models by their neutral alias (default) or their name")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study with slug {options['study']!r}.")
        try:
            report = release_build(study=study, out_dir=options["out"], license=options["license"],
                                   models=options["models"])
        except ReleaseError as error:
            raise CommandError(str(error)) from error
        counts = report["counts"]
        self.stdout.write(
            f"Wrote {counts['captions']} captions and {counts['windows']} windows "
            f"({', '.join(report['files'])}) to {options['out']}."
        )
