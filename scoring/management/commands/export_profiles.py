from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from scoring.profiles import ProfileError, profile_export


class Command(BaseCommand):
    help = (
        "Write a study's failure profile: one CSV and one JSON per table, every figure as PNG "
        "and SVG, a self-contained report.html and a manifest.json."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--out", required=True, help="the folder to write (created if needed)")
        parser.add_argument("--resamples", type=int, default=20_000,
                            help="clip-bootstrap resamples (default 20000, as in the paper)")
        parser.add_argument("--adjusted-resamples", type=int, default=4_000,
                            help="resamples of the adjusted pairwise model (default 4000)")
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        parser.add_argument("--leaderboard-clips", default="own", choices=["own", "common"],
                            help="the leaderboard's means: over each model's own scored clips "
                            "(default, as the paper) or only clips every model has (common)")
        parser.add_argument("--external-judges", default="",
                            help="comma-separated imported metrics (import_scores) the "
                            "leaderboard ranks by as judges too")
        parser.add_argument("--paired-only", action="store_true",
                            help="compute every table on the paired subset of clips")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study with slug {options['study']!r}.")
        for name in ("resamples", "adjusted_resamples"):
            if options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1.")

        def progress(done: int, total: int, message: str) -> None:
            self.stdout.write(f"[{done:>2}/{total}] {message}")
            self.stdout.flush()

        try:
            manifest = profile_export(
                study=study, out_dir=options["out"], resamples=options["resamples"],
                adjusted_resamples=options["adjusted_resamples"], seed=options["seed"],
                paired_only=options["paired_only"], progress=progress,
                leaderboard_clips=options["leaderboard_clips"],
                external_judges=[m.strip() for m in options["external_judges"].split(",")
                                 if m.strip()],
            )
        except ProfileError as error:
            raise CommandError(str(error)) from error
        failed = manifest["figures_failed"]
        missing = f"; {len(failed)} figure(s) could not be drawn: {', '.join(failed)}"
        self.stdout.write(
            f"Wrote {len(manifest['tables'])} tables (CSV + JSON), {len(manifest['figures'])} "
            f"figures (PNG + SVG) and report.html to {options['out']}"
            + (missing if failed else ".")
        )
