from django.urls import path

from annotation.api import content as api
from annotation.api import studies as api_studies

urlpatterns = [
    path("studies/", api_studies.StudyList.as_view(), name="api-studies"),
    path("studies/slug-check/", api_studies.SlugCheck.as_view(), name="api-slug-check"),
    path("studies/<slug:slug>/", api_studies.StudyDetail.as_view(), name="api-study"),
    path("studies/<slug:slug>/members/", api_studies.MemberList.as_view(), name="api-members"),
    path("studies/<slug:slug>/members/<str:username>/", api_studies.MemberDetail.as_view(), name="api-member"),
    path(
        "studies/<slug:slug>/members/<str:username>/deactivate/",
        api_studies.MemberDeactivate.as_view(),
        name="api-member-deactivate",
    ),
    path("studies/<slug:slug>/invitations/", api_studies.InvitationList.as_view(), name="api-invitations"),
    path(
        "studies/<slug:slug>/invitations/<int:invitation_id>/revoke/",
        api_studies.InvitationRevoke.as_view(),
        name="api-invitation-revoke",
    ),
    path(
        "studies/<slug:slug>/invitations/<int:invitation_id>/send/",
        api_studies.InvitationSend.as_view(),
        name="api-invitation-send",
    ),
    path("studies/<slug:slug>/history/", api_studies.StudyHistory.as_view(), name="api-study-history"),
    path("taxonomies/", api_studies.TaxonomyList.as_view(), name="api-taxonomies"),
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
        "studies/<slug:slug>/captions/import-jobs/",
        api.CaptionImportJobs.as_view(),
        name="api-caption-import-jobs",
    ),
    path(
        "studies/<slug:slug>/captions/import-jobs/<int:job_id>/",
        api.CaptionImportJobDetail.as_view(),
        name="api-caption-import-job",
    ),
    path(
        "studies/<slug:slug>/references/import/",
        api.ReferenceImport.as_view(),
        name="api-reference-import",
    ),
]

from annotation.api import workflow as flow  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/my-queue/", flow.MyQueue.as_view(), name="api-my-queue"),
    path("studies/<slug:slug>/my-queue/next/", flow.StartNext.as_view(), name="api-start-next"),
    path("studies/<slug:slug>/review-queue/", flow.ReviewQueue.as_view(), name="api-review-queue"),
    path(
        "studies/<slug:slug>/review-queue/next/", flow.ReviewNext.as_view(), name="api-review-next"
    ),
    path("studies/<slug:slug>/assignments/", flow.Assign.as_view(), name="api-assign"),
    path("annotations/<int:annotation_id>/", flow.AnnotationDetail.as_view(), name="api-annotation"),
    path("annotations/<int:annotation_id>/open/", flow.AnnotationOpen.as_view(), name="api-open"),
    path("annotations/<int:annotation_id>/draft/", flow.AnnotationDraft.as_view(), name="api-annotation-draft"),
    path("annotations/<int:annotation_id>/lock-overview/", flow.OverviewLock.as_view(), name="api-lock-overview"),
    path("annotations/<int:annotation_id>/submit/", flow.AnnotationSubmit.as_view(), name="api-submit"),
    path("annotations/<int:annotation_id>/undo/", flow.DecisionUndo.as_view(), name="api-undo"),
    path("annotations/<int:annotation_id>/audit/", flow.AuditTrail.as_view(), name="api-audit"),
    path("annotations/<int:annotation_id>/claim/", flow.ReviewAction.as_view(action="claim"), name="api-claim"),
    path("annotations/<int:annotation_id>/release/", flow.ReviewAction.as_view(action="release"), name="api-release"),
    path("annotations/<int:annotation_id>/approve/", flow.ReviewAction.as_view(action="approve"), name="api-approve"),
    path("annotations/<int:annotation_id>/amend/", flow.ReviewAction.as_view(action="amend"), name="api-amend"),
    path("annotations/<int:annotation_id>/return/", flow.ReviewAction.as_view(action="return"), name="api-return"),
    path("edit-size/", flow.EditSize.as_view(), name="api-edit-size"),
]

from annotation.api import lifecycle  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/lifecycle/", lifecycle.StudyLifecycle.as_view(), name="api-study-lifecycle"),
    path("studies/<slug:slug>/start/", lifecycle.StudyStart.as_view(), name="api-study-start"),
    path("studies/<slug:slug>/close/", lifecycle.StudyClose.as_view(), name="api-study-close"),
    path("studies/<slug:slug>/archive/", lifecycle.StudyArchive.as_view(), name="api-study-archive"),
]

from annotation.api import quality  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/annotator-quality/", quality.AnnotatorQuality.as_view(), name="api-annotator-quality"),
    path("studies/<slug:slug>/work-log/", quality.WorkLog.as_view(), name="api-work-log"),
]

from annotation.api import gold  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/gold/", gold.GoldList.as_view(), name="api-gold"),
    path("studies/<slug:slug>/gold/import/", gold.GoldImport.as_view(), name="api-gold-import"),
    path("studies/<slug:slug>/practice/", gold.Practice.as_view(), name="api-practice"),
    path("studies/<slug:slug>/practice/mine/", gold.MyQualification.as_view(), name="api-practice-mine"),
    path("studies/<slug:slug>/practice/qualifications/", gold.Qualifications.as_view(), name="api-qualifications"),
    path(
        "studies/<slug:slug>/practice/qualifications/<str:username>/retry/",
        gold.QualificationRetry.as_view(),
        name="api-qualification-retry",
    ),
    path(
        "annotations/<int:annotation_id>/practice-feedback/",
        gold.PracticeFeedback.as_view(),
        name="api-practice-feedback",
    ),
]

from annotation.api import recruitment as recruiting  # noqa: E402

urlpatterns += [
    path(
        "studies/<slug:slug>/recruitment-links/",
        recruiting.RecruitmentLinkList.as_view(),
        name="api-recruitment-links",
    ),
    path(
        "studies/<slug:slug>/recruitment-links/<int:link_id>/close/",
        recruiting.RecruitmentLinkClose.as_view(),
        name="api-recruitment-link-close",
    ),
    path("studies/<slug:slug>/participants/", recruiting.ParticipantList.as_view(), name="api-participants"),
]

from annotation.api import payments  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/payments/", payments.Payments.as_view(), name="api-payments"),
    path("studies/<slug:slug>/payments.csv", payments.PaymentsCsv.as_view(), name="api-payments-csv"),
    path("studies/<slug:slug>/payments/bonus/", payments.BonusPreview.as_view(), name="api-payments-bonus"),
    path("studies/<slug:slug>/payments/bonus.csv", payments.BonusFile.as_view(), name="api-payments-bonus-file"),
]

from annotation.api import guidelines  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/guidelines/", guidelines.Guidelines.as_view(), name="api-guidelines"),
    path("studies/<slug:slug>/guidelines/diff/", guidelines.GuidelinesDiff.as_view(), name="api-guidelines-diff"),
    path(
        "studies/<slug:slug>/guidelines/dismiss/",
        guidelines.GuidelinesDismiss.as_view(),
        name="api-guidelines-dismiss",
    ),
    path(
        "studies/<slug:slug>/guidelines/<int:number>/",
        guidelines.GuidelineVersionDetail.as_view(),
        name="api-guideline-version",
    ),
]

from annotation.api import consent  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/consent/", consent.Consent.as_view(), name="api-consent"),
    path("studies/<slug:slug>/consent/accept/", consent.ConsentAccept.as_view(), name="api-consent-accept"),
]

from annotation.api import withdrawal  # noqa: E402

urlpatterns += [
    path("studies/<slug:slug>/withdraw/", withdrawal.Withdraw.as_view(), name="api-withdraw"),
    path("studies/<slug:slug>/withdrawals/", withdrawal.WithdrawalList.as_view(), name="api-withdrawals"),
]
