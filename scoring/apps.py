from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """The Django side of scoring: jobs and stored results. The metric code itself
    (scoring.metrics.edits, scoring.metrics.reference, ...) imports nothing from Django."""

    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from django.conf import settings

        from annotation.services.lifecycle import STUDY_CLOSED_HOOKS, STUDY_CLOSING_HOOKS, UNFINISHED_COUNTERS
        from annotation.services.withdrawal import ERASURE_HOOKS
        from annotation.services.workflow import FINAL_VERDICT_HOOKS, VERDICT_WITHDRAWN_HOOKS
        from scoring.chunks import study_job_run
        from scoring.erasure import llmfacts_cache_erase, scores_erase, shared_cache_erase
        from scoring.families import register_llmfacts_family
        from scoring.lifecycle import final_profile_start, unscored_counter
        from scoring.metrics import judges, reference
        from scoring.services import (
            STUDY_JOB_RUNNERS,
            score_jobs_end,
            score_verdict_withdrawn,
        )
        from scoring.shared_cache import shared_cache
        from scoring.verdict_jobs import score_final_verdict

        register_llmfacts_family()
        reference.configure(java_options=settings.METEOR_JAVA_OPTIONS, jvms=settings.METEOR_JVMS)
        judges.configure(  # not embeddings': a web process does not load numpy
            device=settings.SCORING_EMBED_DEVICE,
            batch_size=settings.SCORING_EMBED_BATCH,
            shared_cache=shared_cache,
        )
        if study_job_run not in STUDY_JOB_RUNNERS:
            STUDY_JOB_RUNNERS.append(study_job_run)
        if score_final_verdict not in FINAL_VERDICT_HOOKS:
            FINAL_VERDICT_HOOKS.append(score_final_verdict)
        if score_verdict_withdrawn not in VERDICT_WITHDRAWN_HOOKS:
            VERDICT_WITHDRAWN_HOOKS.append(score_verdict_withdrawn)
        for hook in (scores_erase, shared_cache_erase, llmfacts_cache_erase):
            if hook not in ERASURE_HOOKS:
                ERASURE_HOOKS.append(hook)
        if final_profile_start not in STUDY_CLOSED_HOOKS:
            STUDY_CLOSED_HOOKS.append(final_profile_start)
        if score_jobs_end not in STUDY_CLOSING_HOOKS:
            STUDY_CLOSING_HOOKS.append(score_jobs_end)
        if unscored_counter not in UNFINISHED_COUNTERS:
            UNFINISHED_COUNTERS.append(unscored_counter)
