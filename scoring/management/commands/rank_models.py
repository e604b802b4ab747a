import json

import pandas as pd
from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRefused
from annotation.models import Study
from scoring.external_scores import external_judges
from scoring.metrics.analysis.leaderboard import leaderboard
from scoring.metrics.report import table_records
from scoring.profiles import LEADERBOARD_REFERENCES, ProfileError, judged_scores


class Command(BaseCommand):
    help = (
        "Rank a study's models with the judge ensemble (CLIP-CC-Bench's Borda): per-judge means, "
        "Borda points and rank (ties by the mean across judges, then name), Kendall's tau "
        "between judges and W across them, and how often each rank holds over bootstrap "
        "resamples of the clips. Reads stored scores: run a scoring job with embedding metrics "
        "first. CSV: the leaderboard on standard output, the agreement on standard error; JSON: "
        "both in one document."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--metric", default="hm_cf",
                            help="the judged metric to rank by (default hm_cf)")
        parser.add_argument("--judges", help="comma-separated judges (default: every stored one)")
        parser.add_argument("--references", default="corrected",
                            choices=list(LEADERBOARD_REFERENCES),
                            help="what each overview was scored against: its own final "
                            "corrected overview (default), the approved finals of the clip's "
                            "other captions, or the clip's imported references")
        parser.add_argument("--format", default="csv", choices=["csv", "json"])
        parser.add_argument("--resamples", type=int, default=1000,
                            help="bootstrap resamples of the clips (default 1000)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--external", default="",
                            help="comma-separated imported metrics (import_scores) to rank by "
                            "as judges too, oriented by their direction")
        parser.add_argument("--clips", default="own", choices=["own", "common"],
                            help="means over each model's own scored clips (default, as the "
                            "paper and CLIP-CC-Bench) or only clips every model has (common)")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study with slug {options['study']!r}.")
        if options["resamples"] < 1:
            raise CommandError("--resamples must be at least 1.")
        judges = [j.strip() for j in (options["judges"] or "").split(",") if j.strip()]
        try:
            scores = judged_scores(study, metric=options["metric"], judges=judges or None,
                                   references=options["references"])
        except ProfileError as error:
            raise CommandError(str(error)) from error
        external = [m.strip() for m in options["external"].split(",") if m.strip()]
        lower: list[str] = []
        if external:
            try:
                extra, lower = external_judges(study, external)
            except ImportRefused as refused:
                raise CommandError("; ".join(refused.errors)) from None
            scores = pd.concat([scores, extra], ignore_index=True)
        table, agreement = leaderboard(scores, resamples=options["resamples"],
                                       seed=options["seed"], clips=options["clips"],
                                       lower_better=lower)
        if len(table) < 2:
            raise CommandError(
                f"Not computable: needs stored {options['metric']} scores "
                f"({options['references']} references) for at least 2 models on the same clips; "
                f"found {scores['model'].nunique()} model(s). Run `manage.py score --study "
                f"{study.slug}` with embedding metrics first.")
        if options["format"] == "json":
            document = {"study": study.slug, "metric": options["metric"],
                        "references": options["references"], "leaderboard":
                        table_records(table), "agreement": table_records(agreement)}
            self.stdout.write(json.dumps(document, indent=1))
            return
        self.stdout.write(table.to_csv(index=False), ending="")
        # One table per stream keeps the output a plain CSV file.
        self.stderr.write("# inter-judge agreement\n" + agreement.to_csv(index=False), ending="")
