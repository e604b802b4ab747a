#!/usr/bin/env python
"""Django's command-line utility for Redline."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from annotation.errors import ServiceError, StudyStateRefused

    try:
        execute_from_command_line(sys.argv)
    except (ServiceError, StudyStateRefused) as refusal:
        # A refusal is a sentence for the person who typed the command, not a traceback: every
        # command answers it the same way (the API answers it with 400 or 409).
        sys.stderr.write(f"Refused: {refusal}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
