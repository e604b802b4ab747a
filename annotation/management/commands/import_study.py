from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services.bundles import bundle_import
from annotation.services.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Read a study bundle written by export_study into this database, all or nothing. "
        "Users are matched by username; missing ones are created without a usable password."
    )

    def add_arguments(self, parser):
        parser.add_argument("bundle", help="the bundle file; - for standard input")
        parser.add_argument(
            "--slug", help="store the study under this slug instead of the bundle's"
        )

    def handle(self, *args, bundle, slug, **options):
        if bundle == "-":
            import sys

            data = sys.stdin.buffer.read()
        else:
            path = Path(bundle)
            if not path.is_file():
                raise CommandError(f"No bundle file at {bundle}.")
            data = path.read_bytes()
        try:
            report = bundle_import(
                data=data, slug=slug, progress=lambda message: self.stdout.write(f"  {message}")
            )
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        counts = ", ".join(f"{count} {name}" for name, count in report.counts.items())
        self.stdout.write(f"Imported study {report.study.slug!r}: {counts}.")
        if report.users_created:
            self.stdout.write(
                f"Created {len(report.users_created)} user(s) without a password: "
                f"{', '.join(report.users_created)}."
            )
        for note in report.notes:
            self.stdout.write(f"Note: {note}")
