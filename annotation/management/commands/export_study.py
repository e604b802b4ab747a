import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.interchange import bundles
from annotation.management.commands._study import get_study
from annotation.services.bundles import bundle_export


class Command(BaseCommand):
    help = (
        "Write a study to a bundle: one versioned JSON file with its taxonomy, clips' metadata "
        "(not "
        "the videos), models, captions, references, annotations, QC and audit trail "
        "(docs/bundle-format.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument(
            "--out", required=True, help="the bundle file to write; - for standard output"
        )

    def handle(self, *args, study, out, **options):
        found = get_study(study)
        bundle = bundle_export(study=found)
        data = bundles.dumps(bundle)
        if out == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        Path(out).write_bytes(data)
        self.stderr.write(
            f"Wrote study {found.slug!r} to {out} (format version {bundle['format_version']}): "
            f"{len(bundle['clips'])} clips, {len(bundle['captions'])} captions, "
            f"{len(bundle['annotations'])} annotations, {len(bundle['audit'])} audit events."
        )
