from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ServiceError
from annotation.services.studies import study_create


class Command(BaseCommand):
    help = "Create a study with the default taxonomy and the protocol's default settings."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", help="display name (default: the slug)")
        parser.add_argument("--description", default="")

    def handle(self, *args, slug, name, description, **options):
        try:
            study = study_create(slug=slug, name=name or slug, description=description)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Created study {study.slug!r} with taxonomy {study.taxonomy}.")
