import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.interchange.formats.strict_json import json_loads_strict
from scoring import families
from scoring.metrics.pairs import read_pairs
from scoring.metrics.registry import METRICS, Pair, ScoringOptions
from scoring.metrics.segment import DEFAULT_LANGUAGE, LANGUAGES


class Command(BaseCommand):
    help = (
        'Score arbitrary text pairs. PAIRS.jsonl has one {"id", "candidate", "reference"} per line '
        "(reference: a string, or a list of strings for the reference metrics). Writes one line "
        "per pair: its id and each metric's value under the metric's name; a judged (embedding) "
        "metric gives {judge: value}. Edit-size and embedding metrics read the first reference. "
        "Reference metrics are scored over the whole file as one corpus (CIDEr is "
        "corpus-relative). Edit-size metrics count words in the pair's \"language\" (en, zh, ja, "
        "other), else in --language (default en). `--metrics list` shows the metrics."
    )

    def add_arguments(self, parser):
        parser.add_argument("pairs", nargs="?", type=Path, help="the JSON Lines file")
        parser.add_argument(
            "--metrics", required=True, help="comma-separated metric names, or `list`"
        )
        parser.add_argument("--judges", help="comma-separated judges for embedding metrics")
        parser.add_argument(
            "--splitter", default="punkt", choices=["punkt", "redline"],
            help="sentence splitter of fine, HM-CF and CosSen: punkt (NLTK's, the benchmarks', "
            "default) or redline (ours: also splits at line breaks and glued sentences)")
        parser.add_argument(
            "--language", default=DEFAULT_LANGUAGE, choices=LANGUAGES,
            help="caption language of pairs that name none: how edit metrics count words "
            "(zh and ja are cut into words by a segmenter; default en)")
        parser.add_argument("--out", type=Path, help="output file (default: standard output)")
        parser.add_argument(
            "--skip-bad", action="store_true", help="skip bad lines (reported) instead of stopping"
        )

    def handle(self, *args, pairs, metrics, judges, splitter, language, out, skip_bad,
               **options):
        if metrics.strip() == "list":
            self.list_metrics()
            return
        names = list(dict.fromkeys(name.strip() for name in metrics.split(",") if name.strip()))
        unknown = [name for name in names if name not in METRICS]
        if unknown or not names:
            raise CommandError(
                f"Unknown metric(s): {', '.join(unknown) or '(none given)'}. "
                "`--metrics list` shows the available ones."
            )
        judge_list = [j.strip() for j in (judges or "").split(",") if j.strip()]
        judge_list = judge_list or families.default_judges()
        if pairs is None:
            raise CommandError("Give the JSON Lines file of pairs to score.")
        try:
            text = pairs.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"{pairs}: cannot be read ({error})") from error
        good, bad = read_pairs(text.splitlines(), loads=json_loads_strict)
        for problem in bad:
            self.stderr.write(f"{pairs}:{problem.line}: {problem.reason}")
        if bad and not skip_bad:
            raise CommandError(
                f"{len(bad)} bad line(s) in {pairs}; nothing was scored "
                "(--skip-bad scores the other lines)."
            )
        if bad:
            self.stderr.write(f"Skipped {len(bad)} bad line(s).")

        batch = [Pair(str(n), p.candidate, p.references) for n, p in enumerate(good)]
        languages = {str(n): p.language or language for n, p in enumerate(good)}
        records = [{"id": p.id} for p in good]
        failures = self.score(batch, names, judge_list, records, splitter, languages)
        self.write(records, out)
        if failures:
            raise CommandError(
                "Failed: " + "; ".join(f"{key}: {message}" for key, message in failures.items())
            )

    def score(self, batch, names, judge_list, records, splitter, languages) -> dict[str, str]:
        """Fill ``records`` family by family; returns {metric[@judge]: error} of what failed."""
        by_family: dict[str, list[str]] = {}
        for name in names:
            by_family.setdefault(families.family_of(name), []).append(name)
        failures: dict[str, str] = {}
        for family, family_names in by_family.items():
            judged = family in families.JUDGED_FAMILIES
            for judge in judge_list if judged else [""]:
                label = f"{family}{f' ({judge})' if judge else ''}"
                self.stderr.write(f"Scoring {len(batch)} pair(s): {label}...")
                started = time.monotonic()
                options = ScoringOptions(judge=judge or judge_list[0], splitter=splitter)
                try:
                    outcome = self.score_family(family, batch, family_names, options, languages)
                except Exception as error:  # noqa: BLE001 - one family failing spares the others
                    outcome = families.BatchOutcome(errors={p.id: str(error) for p in batch})
                    for name in family_names:
                        failures[f"{name}@{judge}" if judged else name] = str(error)
                for pair, record in zip(batch, records, strict=True):
                    values = outcome.scores.get(pair.id)
                    for name in family_names:
                        value = values.get(name) if values is not None else None
                        if judged:
                            record.setdefault(name, {})[judge] = value
                        else:
                            record[name] = value
                        if values is None:
                            key = f"{name}@{judge}" if judged else name
                            message = outcome.errors.get(pair.id, "not scored")
                            record.setdefault("errors", {})[key] = message
                            failures.setdefault(key, f"{len(outcome.errors)} pair(s) failed")
                self.stderr.write(f"  {label} done in {time.monotonic() - started:.1f} s")
        return failures

    def score_family(self, family, batch, names, options, languages) -> families.BatchOutcome:
        """One family's outcome; edit metrics are scored per caption language."""
        if family != "edit":
            return families.score_batch(family, batch, names, options)
        outcome = families.BatchOutcome()
        for lang in dict.fromkeys(languages[p.id] for p in batch):
            part = families.score_batch(
                family, [p for p in batch if languages[p.id] == lang], names,
                ScoringOptions(judge=options.judge, splitter=options.splitter, language=lang))
            outcome.scores.update(part.scores)
            outcome.errors.update(part.errors)
            outcome.details.update(part.details)
        return outcome

    def write(self, records, out) -> None:
        lines = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        if out is None:
            self.stdout.write(lines, ending="")
            return
        try:
            out.write_text(lines, encoding="utf-8")
        except OSError as error:
            raise CommandError(f"{out}: cannot be written ({error})") from error
        self.stderr.write(f"Wrote {len(records)} line(s) to {out}.")

    def list_metrics(self) -> None:
        width = max(len(name) for name in METRICS)
        for name, metric in METRICS.items():
            note = ""
            if metric.family == families.LLMFACTS and not families.llmfacts_configured():
                note = " [not configured: set LLMFACTS_BASE_URL and LLMFACTS_MODEL]"
            if metric.family in families.JUDGED_FAMILIES:
                note = f" [judges: {', '.join(families.default_judges())} by default]"
            self.stdout.write(f"{name:<{width}}  {metric.family:<10} {metric.description}{note}")
