from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.media import views as annotation_views


class ApiDocs(SpectacularSwaggerSplitView):
    """Swagger UI. The split view serves its start-up script as a file (no inline script); the
    UI itself writes style elements, so this one page allows inline styles (never scripts)."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.replace(
            "style-src 'self'", "style-src 'self' 'unsafe-inline'"
        )
        return response


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("annotation.api.urls")),
    path("api/", include("scoring.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", ApiDocs.as_view(url_name="schema"), name="api-docs"),
    path("clips/<int:clip_id>/video", annotation_views.clip_video, name="clip-video"),
    path("clips/<int:clip_id>/poster", annotation_views.clip_poster, name="clip-poster"),
    path("", include("frontend.urls")),
]

handler404 = "annotation.api.errors.not_found"
