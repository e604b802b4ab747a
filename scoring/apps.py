from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """The Django side of scoring: jobs and stored results. The metric code itself
    (scoring.metrics.edits, scoring.metrics.reference, ...) imports nothing from Django."""

    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from annotation.services.lifecycle import STUDY_CLOSED_HOOKS, UNFINISHED_COUNTERS
        from annotation.services.workflow import FINAL_VERDICT_HOOKS
        from scoring.families import register_llmfacts_family
        from scoring.lifecycle import final_profile_start, unscored_counter
        from scoring.services import score_final_verdict

        register_llmfacts_family()
        if score_final_verdict not in FINAL_VERDICT_HOOKS:
            FINAL_VERDICT_HOOKS.append(score_final_verdict)
        if final_profile_start not in STUDY_CLOSED_HOOKS:
            STUDY_CLOSED_HOOKS.append(final_profile_start)
        if unscored_counter not in UNFINISHED_COUNTERS:
            UNFINISHED_COUNTERS.append(unscored_counter)
