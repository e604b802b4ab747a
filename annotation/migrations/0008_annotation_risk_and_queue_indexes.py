"""The review risk is stored on each annotation, and each queue ordering gets its index.

Annotations submitted before this migration get their risk computed here, as
annotation.services.workflow.annotation_risk_refresh does at every submission.
"""

from collections import defaultdict

from django.conf import settings
from django.db import migrations, models

from annotation.migrations._sqlite_triggers import restore_annotation_triggers

SUBMITTED_ONCE = ("submitted", "in_review", "approved")


def store_risks(apps, schema_editor):
    from annotation.rules import risk

    Annotation = apps.get_model("annotation", "Annotation")
    CorrectionPass = apps.get_model("annotation", "CorrectionPass")
    WindowCorrection = apps.get_model("annotation", "WindowCorrection")
    annotations = list(
        Annotation.objects.filter(state__in=SUBMITTED_ONCE + ("returned",)).select_related(
            "caption__clip__study"
        )
    )
    if not annotations:
        return
    passes = {
        p.annotation_id: p
        for p in CorrectionPass.objects.filter(kind="annotator", annotation__in=annotations)
    }
    windows = defaultdict(list)
    for row in WindowCorrection.objects.filter(correction_pass__kind="annotator").select_related(
        "window"
    ):
        windows[row.correction_pass_id].append(
            risk.WindowJudgement(
                row.verdict, f"{row.window.scene} {row.window.shot}", f"{row.scene} {row.shot}"
            )
        )
    verdicts = defaultdict(set)
    for annotation in annotations:
        if annotation.state in SUBMITTED_ONCE and annotation.pk in passes:
            verdicts[annotation.caption_id].add(passes[annotation.pk].overview_verdict)
    for annotation in annotations:
        correction = passes.get(annotation.pk)
        if correction is None:
            continue
        study = annotation.caption.clip.study
        score, reasons = risk.review_risk(
            original_overview=annotation.caption.overview,
            overview_verdict=correction.overview_verdict,
            overview_text=correction.overview_text,
            windows=windows[correction.pk],
            active_seconds=annotation.active_seconds,
            telemetry=annotation.telemetry,
            disagreement=len(verdicts[annotation.caption_id]) > 1,
            scale=max(study.word_thresholds or [16]),
            cut=study.near_total_cut,
        )
        Annotation.objects.filter(pk=annotation.pk).update(risk=score, risk_reasons=reasons)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_clip_shot_changes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="annotation",
            name="annotation__state_c0688d_idx",
        ),
        migrations.AddField(
            model_name="annotation",
            name="risk",
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name="annotation",
            name="risk_reasons",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                fields=["annotator", "state", "assigned_at", "id"], name="annotation_my_queue"
            ),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                fields=["state", "-risk", "submitted_at", "id"], name="annotation_review_risk"
            ),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                fields=["state", "submitted_at", "id"], name="annotation_review_oldest"
            ),
        ),
        migrations.RunPython(restore_annotation_triggers, migrations.RunPython.noop),
        migrations.RunPython(store_risks, migrations.RunPython.noop),
    ]
