from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ServiceError
from annotation.services.bundles import bundle_import


class Command(BaseCommand):
    help = (
        "Read a study bundle written by export_study into this database, all or nothing. "
        "Users are matched by username; missing ones are created without a usable password. Roles "
        "given to accounts that already exist here need --grant-existing."
    )

    def add_arguments(self, parser):
        parser.add_argument("bundle", help="the bundle file; - for standard input")
        parser.add_argument(
            "--slug", help="store the study under this slug instead of the bundle's"
        )
        parser.add_argument(
            "--grant-existing",
            action="store_true",
            help="confirm the roles the bundle gives to accounts that already exist here "
            "(without it, such a bundle is refused, listing them)",
        )

    def handle(self, *args, bundle, slug, grant_existing, **options):
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
                data=data,
                slug=slug,
                grant_existing=grant_existing,
                progress=lambda message: self.stdout.write(f"  {message}"),
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
        if report.grants:
            self.stdout.write(
                f"Granted roles to {len(report.grants)} existing account(s): "
                f"{', '.join(report.grants)}."
            )
        for note in report.notes:
            self.stdout.write(f"Note: {note}")
