from django.urls import path

from scoring import api

urlpatterns = [
    path("studies/<slug:slug>/score-jobs/", api.ScoreJobList.as_view(), name="api-score-jobs"),
    path(
        "studies/<slug:slug>/score-jobs/<int:job_id>/",
        api.ScoreJobDetail.as_view(),
        name="api-score-job",
    ),
    path(
        "studies/<slug:slug>/score-jobs/<int:job_id>/cancel/",
        api.ScoreJobCancel.as_view(),
        name="api-score-job-cancel",
    ),
    path("studies/<slug:slug>/scores/", api.ScoreResultList.as_view(), name="api-scores"),
    path("studies/<slug:slug>/scores/import/", api.ScoresImport.as_view(),
         name="api-scores-import"),
    path(
        "studies/<slug:slug>/scores/summary/", api.ScoreSummary.as_view(), name="api-score-summary"
    ),
]
