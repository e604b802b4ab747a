from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from annotation import routes, study_settings

        # Every word routed under /studies/ or /api/studies/ is refused as a study's slug.
        study_settings.route_words = routes.study_route_words
