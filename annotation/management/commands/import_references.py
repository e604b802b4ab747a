from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation import formats
from annotation.management.commands._study import get_study
from annotation.services.captions import references_store
from annotation.services.errors import ImportRefused


class Command(BaseCommand):
    help = (
        "Import expert reference texts. Formats: jsonl ({\"clip\", \"text\", \"source\", "
        "\"language\"} per line), clip-cc (CLIP-CC-Bench clip_cc_dataset.json), fm-v2t "
        "(FM-V2T descriptions CSV; give --language). All-or-nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=["jsonl", "clip-cc", "fm-v2t"], default="jsonl")
        parser.add_argument("--language", default="en", help="language of an fm-v2t file")

    def handle(self, *args, file, study, format, language, **options):
        study = get_study(study)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        known = set(study.clips.values_list("name", flat=True))
        if format == "jsonl":
            records, errors = formats.parse_references_jsonl(data, known_clips=known)
        elif format == "clip-cc":
            records, errors = formats.parse_clip_cc_references(data, known_clips=known)
        else:
            records, errors = formats.parse_fmv2t_descriptions_csv(data, language=language, known_clips=known)
        try:
            report = references_store(study=study, records=records, errors=errors)
        except ImportRefused as exc:
            raise CommandError(f"{file}: {exc}") from exc
        self.stdout.write(
            f"Stored {report.stored} reference(s); {report.already_present} already present."
        )
