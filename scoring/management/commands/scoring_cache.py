from django.core.management.base import BaseCommand

from scoring.shared_cache import shared_cache_clear, shared_cache_summary


class Command(BaseCommand):
    help = (
        "Show what the scoring cache shared by the workers holds (METEOR's pair statistics, "
        "judges' vectors), or empty it with --clear. Emptying changes no score: values are "
        "computed again when needed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--clear", action="store_true", help="delete the cached values")
        parser.add_argument("--namespace", default="",
                            help="only this namespace (as listed), e.g. 'meteor-1.5 -l en -norm'")

    def handle(self, *args, **options):
        if options["clear"]:
            deleted = shared_cache_clear(namespace=options["namespace"])
            self.stdout.write(f"Deleted {deleted:,} cached value(s).")
            return
        rows = [row for row in shared_cache_summary()
                if not options["namespace"] or row[0] == options["namespace"]]
        if not rows:
            self.stdout.write("The scoring cache is empty.")
        for namespace, entries in rows:
            self.stdout.write(f"{entries:>10,}  {namespace}")
