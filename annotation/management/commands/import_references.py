from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRefused
from annotation.management.commands._study import get_study
from annotation.services.captions import REFERENCE_FORMATS, references_import


class Command(BaseCommand):
    help = (
        "Import expert reference texts. Formats: jsonl ({\"clip\", \"text\", \"source\", "
        "\"language\"} per line), clip-cc (CLIP-CC-Bench clip_cc_dataset.json), fm-v2t "
        "(FM-V2T descriptions CSV; give --language). All-or-nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=REFERENCE_FORMATS, default="jsonl")
        parser.add_argument("--language", default="en", help="language of an fm-v2t file")

    def handle(self, *args, file, study, format, language, **options):
        study = get_study(study)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        try:
            report = references_import(study=study, data=data, format=format, language=language)
        except ImportRefused as exc:
            raise CommandError(f"{file}: {exc}") from exc
        self.stdout.write(
            f"Stored {report.stored} reference(s); {report.already_present} already present."
        )
