"""List the media files no row names and the rows whose file is gone; --clean removes the former."""

from django.core.management.base import BaseCommand

from annotation.media.storage import media_check


class Command(BaseCommand):
    help = (
        "List files under MEDIA_ROOT that no row names (left by a failed upload or export) and rows "
        "whose file is missing. A dry run unless --clean, which removes the files without rows "
        "(rows without files are only listed: they need a person to decide)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--clean", action="store_true", help="remove the files without rows")

    def handle(self, *args, clean: bool = False, **options):
        report = media_check(clean=clean)
        for name in report.orphans:
            self.stdout.write(f"{'removed' if clean else 'file without a row'}: {name}")
        for what in report.missing:
            self.stdout.write(f"row without its file: {what}")
        verb = "removed" if clean else "found (run with --clean to remove them)"
        orphans = f"{len(report.orphans)} file(s) without a row {verb}" if report.orphans else "0 files without a row"
        self.stdout.write(f"{orphans}; {len(report.missing)} row(s) without their file.")
