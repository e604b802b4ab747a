from django.contrib.auth import views as auth_views
from django.urls import path

from frontend import (
    views,
    views_guidelines,
    views_profiles,
    views_progress,
    views_recruitment,
    views_release,
    views_review,
    views_setup,
    views_workspace,
)
from frontend.throttle import SignInForm

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(authentication_form=SignInForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("studies/new/", views_setup.study_new, name="study-new"),
    path("studies/<slug:slug>/", views.study_detail, name="study"),
    path("studies/<slug:slug>/settings/", views_setup.study_settings_page, name="study-settings"),
    path("studies/<slug:slug>/members/", views_setup.study_members, name="study-members"),
    path("studies/<slug:slug>/history/", views_setup.study_history, name="study-history"),
    path("studies/<slug:slug>/guidelines/", views_guidelines.study_guidelines, name="study-guidelines"),
    path("invitations/<str:token>/", views_setup.invitation, name="invitation"),
    path("join/<str:token>/", views_recruitment.recruitment, name="recruitment"),
    path("studies/<slug:slug>/done/", views_recruitment.participant_done, name="participant-done"),
    path("studies/<slug:slug>/clips/<str:name>/", views.clip_detail, name="clip"),
    path("studies/<slug:slug>/release.zip", views_release.study_release, name="study-release"),
    path("studies/<slug:slug>/queue/", views_workspace.annotator_queue, name="annotator-queue"),
    path("annotate/<int:annotation_id>/", views_workspace.workspace, name="workspace"),
    path("studies/<slug:slug>/review/", views_review.review_queue, name="review-queue"),
    path("review/<int:annotation_id>/", views_review.review, name="review"),
    path("studies/<slug:slug>/progress/", views_progress.progress, name="progress"),
    path("studies/<slug:slug>/progress/agreement/", views_progress.progress_agreement, name="progress-agreement"),
    path("studies/<slug:slug>/profiles/", views_profiles.profile_page, name="profiles"),
    path("studies/<slug:slug>/profiles/jobs/", views_profiles.profile_job_start, name="profile-jobs"),
    path("studies/<slug:slug>/profiles/llmfacts/<int:result_id>/", views_profiles.llmfacts_facts,
         name="profile-llmfacts"),
    path("studies/<slug:slug>/profiles/jobs/<str:job>/", views_profiles.profile_job, name="profile-job"),
    path("studies/<slug:slug>/profiles/jobs/<str:job>/files/<path:name>", views_profiles.profile_job_file,
         name="profile-job-file"),
    path("studies/<slug:slug>/profiles/corrected/<int:model_id>.jsonl", views_profiles.corrected_jsonl,
         name="corrected-jsonl"),
    path("studies/<slug:slug>/profiles/corrected/<int:model_id>.vtt", views_profiles.corrected_vtt,
         name="corrected-vtt"),
]
