from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from annotation import routes
        from annotation.rules import study_settings
        from annotation.services import caption_jobs, lifecycle, recruitment

        # Every word routed under /studies/ or /api/studies/ is refused as a study's slug.
        study_settings.route_words = routes.study_route_words
        # Closing a study ends its caption imports still queued or running.
        if caption_jobs.caption_import_jobs_at_closing not in lifecycle.STUDY_CLOSING_HOOKS:
            lifecycle.STUDY_CLOSING_HOOKS.append(caption_jobs.caption_import_jobs_at_closing)
        # Closing a study closes its recruitment links.
        if recruitment.recruitment_links_at_closing not in lifecycle.STUDY_CLOSING_HOOKS:
            lifecycle.STUDY_CLOSING_HOOKS.append(recruitment.recruitment_links_at_closing)
