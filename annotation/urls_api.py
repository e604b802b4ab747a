from django.urls import path

from annotation import api

urlpatterns = [
    path("studies/", api.StudyList.as_view(), name="api-studies"),
    path("studies/<slug:slug>/", api.StudyDetail.as_view(), name="api-study"),
    path("studies/<slug:slug>/clips/", api.ClipList.as_view(), name="api-clips"),
    path("studies/<slug:slug>/clips/upload/", api.ClipUpload.as_view(), name="api-clip-upload"),
    path(
        "studies/<slug:slug>/clips/properties/",
        api.ClipPropertiesImport.as_view(),
        name="api-clip-properties",
    ),
    path("studies/<slug:slug>/models/", api.CandidateModelList.as_view(), name="api-models"),
    path("studies/<slug:slug>/captions/", api.CaptionList.as_view(), name="api-captions"),
    path("studies/<slug:slug>/captions/import/", api.CaptionImport.as_view(), name="api-caption-import"),
    path(
        "studies/<slug:slug>/references/import/",
        api.ReferenceImport.as_view(),
        name="api-reference-import",
    ),
]
