from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.interchange import formats
from annotation.management.commands._study import get_study
from annotation.services.clips import clips_import_paths


class Command(BaseCommand):
    help = (
        "Import video files (or every file in the given folders) into a study. "
        "Bad files are reported by name with the reason and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--study", required=True)
        parser.add_argument("--properties", type=Path, help="CSV of clip properties (see docs/formats.md)")

    def handle(self, *args, paths, study, properties, **options):
        study = get_study(study)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"No such file or folder: {', '.join(missing)}")
        properties_by_clip = {}
        if properties:
            records, errors = formats.parse_clip_properties_csv(properties.read_bytes())
            if errors:
                raise CommandError(
                    f"{properties}: {len(errors)} error(s), nothing imported:\n"
                    + "\n".join(str(e) for e in errors)
                )
            for record in records:
                row = dict(record.properties)
                if record.manipulated is not None:
                    row["manipulated"] = record.manipulated
                properties_by_clip[record.clip] = row

        def progress(done, total, name, error):
            status = f"skipped: {error}" if error else "ok"
            self.stdout.write(f"[{done}/{total}] {name} {status}")

        report = clips_import_paths(
            study=study, paths=paths, properties_by_clip=properties_by_clip, progress=progress
        )
        self.stdout.write(
            f"Imported {len(report.imported)} clip(s), skipped {len(report.skipped)}."
        )
        for name, reason in report.skipped:
            self.stderr.write(f"skipped {name}: {reason}")
        unused = set(properties_by_clip) - {c.name for c in study.clips.all()}
        for name in sorted(unused):
            self.stderr.write(f"warning: {properties}: no clip named {name!r}; row ignored")
        if report.skipped and not report.imported:
            raise CommandError("No clip was imported.")
