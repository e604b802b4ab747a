from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRefused
from annotation.management.commands._study import get_study
from annotation.services.captions import (
    captions_import_clip_cc,
    captions_import_clip_cc_files,
    captions_import_jsonl,
)


class Command(BaseCommand):
    help = (
        "Import captions. JSON Lines (default): one caption per line, "
        '{"clip", "model", "overview", "windows": [{"start", "end", "scene", "shot"}], "meta"}. '
        "--format clip-cc reads a CLIP-CC-Bench model file ({\"001\": text}) as overview-only "
        "captions of --model; given a folder, it reads every .json file in it as one model's file "
        "(named by the file) in one import. All-or-nothing unless --keep-invalid."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=["jsonl", "clip-cc"], default="jsonl")
        parser.add_argument("--model", help="model name for --format clip-cc (default: file stem)")
        parser.add_argument(
            "--keep-invalid",
            action="store_true",
            help="store schema-invalid captions flagged invalid_kept, with their errors",
        )

    def progress(self, stored: int, total: int) -> None:
        """A progress bar on stderr, redrawn after each stored batch (imports are all-or-nothing:
        nothing is committed until the last batch)."""
        width = 30
        done = round(width * stored / total) if total else width
        self.stderr.write(
            f"\r[{'#' * done}{'.' * (width - done)}] {stored:,}/{total:,} captions stored",
            ending="\n" if stored >= total else "",
        )
        self.stderr.flush()

    def handle(self, *args, file, study, format, model, keep_invalid, **options):
        study = get_study(study)
        if format == "clip-cc" and file.is_dir():
            return self.import_folder(file, study=study, model=model, keep_invalid=keep_invalid)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        try:
            if format == "jsonl":
                report = captions_import_jsonl(
                    study=study, data=data, keep_invalid=keep_invalid, progress=self.progress
                )
            else:
                report = captions_import_clip_cc(
                    study=study, data=data, model=model or file.stem, keep_invalid=keep_invalid
                )
        except ImportRefused as exc:
            raise CommandError(f"{file}: {exc}") from exc
        self.say_stored(report)

    def import_folder(self, folder: Path, *, study, model, keep_invalid) -> None:
        """Every CLIP-CC-Bench model file of ``folder`` in one all-or-nothing import."""
        if model:
            raise CommandError("--model names one file's model; a folder's files are named by their names")
        paths = sorted(folder.glob("*.json"))
        if not paths:
            raise CommandError(f"{folder}: no .json model files in this folder")
        try:
            files = {path.stem: path.read_bytes() for path in paths}
        except OSError as exc:
            raise CommandError(f"{exc.filename}: cannot be read ({exc.strerror})") from exc
        try:
            report = captions_import_clip_cc_files(
                study=study, files=files, keep_invalid=keep_invalid, progress=self.progress
            )
        except ImportRefused as exc:
            raise CommandError(f"{folder}: {exc}") from exc
        self.say_stored(report)

    def say_stored(self, report) -> None:
        for error in report.errors:
            self.stderr.write(f"kept invalid: {error}")
        created = f"; new models: {', '.join(report.models_created)}" if report.models_created else ""
        self.stdout.write(
            f"Stored {report.stored} caption(s) ({report.kept_invalid} kept invalid){created}."
        )
