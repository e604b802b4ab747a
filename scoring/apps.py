from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """The Django side of scoring: jobs and stored results. The metric code itself
    (scoring.edits, scoring.reference, ...) imports nothing from Django."""

    name = "scoring"
    verbose_name = "Scoring"
