from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRefused
from annotation.interchange.formats.scores import Defaults
from annotation.interchange.limits import file_too_large
from annotation.models import Study
from scoring.external_scores import external_scores_import


class Command(BaseCommand):
    help = (
        'Attach per-caption scores computed elsewhere. SCORES.jsonl has one {"clip", "model", '
        '"value"} per line, plus "metric", "direction" (higher or lower: which way is better), '
        '"version", "source" and "references" (none, or imported) unless given here for the '
        "whole file. All-or-nothing: every problem is printed as `line N, field: reason` and "
        "nothing is stored. A caption has one score of a metric from a source: one it already has "
        "is replaced only with --replace. A metric may not take the name of one of Redline's own "
        "metrics or judges, nor of another source's metric. The scores become Table 1 rows "
        "(controls unless they used the clip's imported references) and can rank the "
        "leaderboard (rank_models --external)."
    )

    def add_arguments(self, parser):
        parser.add_argument("scores", type=Path, help="the JSON Lines file")
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--metric", help="the metric's name, for lines that give none")
        parser.add_argument("--direction", choices=["higher", "lower"],
                            help="which way is better, for lines that give none")
        parser.add_argument("--metric-version", dest="score_version",
                            help="the metric's version, for lines that give none")
        parser.add_argument("--source", help="who or what computed it, for lines that give none")
        parser.add_argument("--references", default="none", choices=["none", "imported"],
                            help="what the score compared the caption with (default none)")
        parser.add_argument("--replace", action="store_true",
                            help="replace the scores the captions already have of this metric "
                                 "and source (without it they are refused); says how many")

    def handle(self, *args, scores, study, metric, direction, score_version, source, references,
               replace, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise CommandError(f"No study with slug {study!r}.")
        try:
            problem = file_too_large(scores)
            if problem:
                raise CommandError(problem)
            data = scores.read_bytes()
        except OSError as error:
            raise CommandError(f"{scores}: cannot be read ({error})") from error
        defaults = Defaults(metric=metric, direction=direction, version=score_version,
                            source=source, references=references)
        try:
            report = external_scores_import(study=found, data=data, defaults=defaults,
                                            replace=replace)
        except ImportRefused as refused:
            for problem in refused.errors:
                self.stderr.write(f"{scores}: {problem}")
            raise CommandError(f"{len(refused.errors)} problem(s) in {scores}; nothing was "
                               "stored.") from None
        self.stdout.write(report.sentence)
