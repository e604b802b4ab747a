import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from scoring.metrics.analysis.planner import ASSUMPTIONS, PlanSettings, plan_study
from scoring.metrics.report import table_records
from scoring.profiles import ProfileError, tidy_tables


class Command(BaseCommand):
    help = (
        "Plan a study from a pilot's final verdicts: how many clips (and annotators) reach a "
        "rejection-rate interval of ± --half-width points for every model, and separate two "
        "models whose gap is --gap points, in --share of studies simulated by resampling the "
        "pilot. Prints the plan (CSV or JSON) and its assumptions."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the pilot study's slug")
        parser.add_argument("--half-width", type=float, default=5.0,
                            help="target half-width of each rate's 95%% interval, points (5)")
        parser.add_argument("--gap", type=float, default=10.0,
                            help="gap between two models to separate, points (10)")
        parser.add_argument("--share", type=float, default=0.9,
                            help="share of simulated studies that must reach it (0.9)")
        parser.add_argument("--simulations", type=int, default=400,
                            help="simulated studies of the search, the same for every size (400)")
        parser.add_argument("--verifications", type=int, default=4_000,
                            help="independent simulated studies that verify the size found "
                            "(4000)")
        parser.add_argument("--captions-per-annotator", type=int, default=200)
        parser.add_argument("--overlap", type=float, default=0.0,
                            help="share of captions annotated twice (0)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", default="csv", choices=["csv", "json"])

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study with slug {options['study']!r}.")
        if not (options["half_width"] > 0 and options["gap"] > 0 and 0 < options["share"] < 1
                and options["simulations"] >= 10 and options["verifications"] >= 100
                and options["captions_per_annotator"] >= 1
                and options["overlap"] >= 0):
            raise CommandError("--half-width and --gap must be > 0, --share between 0 and 1, "
                               "--simulations at least 10, --verifications at least 100, "
                               "--captions-per-annotator at least 1, "
                               "--overlap at least 0.")
        try:
            captions, _ = tidy_tables(study)
        except ProfileError as error:
            raise CommandError(str(error)) from error
        settings = PlanSettings(
            half_width_pts=options["half_width"], gap_pts=options["gap"], share=options["share"],
            simulations=options["simulations"], verifications=options["verifications"],
            seed=options["seed"],
            captions_per_annotator=options["captions_per_annotator"], overlap=options["overlap"])
        table = plan_study(captions, settings)
        if options["format"] == "json":
            self.stdout.write(json.dumps({"study": study.slug, "plan": table_records(table),
                                          "assumptions": ASSUMPTIONS}, indent=1))
            return
        self.stdout.write(table.to_csv(index=False), ending="")
        self.stderr.write(f"# assumptions: {ASSUMPTIONS}")
