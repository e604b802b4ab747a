"""Amendments stored before a reviewer's re-worded window reached the corrected timeline get it
now: a QC pass whose segmentation is rejected with the annotator's timeline, unchanged, has the
reviewer's window texts carried into that timeline (scoring.metrics.final.carry_window_amendments,
as review_amend does since). A reviewer who corrected the timeline themselves keeps theirs."""

from django.db import migrations


def _window_rows(WindowCorrection, correction_pass_id: int) -> list[dict]:
    return [{"index": row.pop("window__index"), **row}
            for row in WindowCorrection.objects.filter(correction_pass_id=correction_pass_id).values(
                "window__index", "verdict", "start", "end", "scene", "shot")]


def carry_amendments(apps, schema_editor) -> None:
    from scoring.metrics.final import carry_window_amendments

    CorrectionPass = apps.get_model("annotation", "CorrectionPass")
    Window = apps.get_model("annotation", "Window")
    WindowCorrection = apps.get_model("annotation", "WindowCorrection")
    for qc in CorrectionPass.objects.filter(kind="qc", segmentation_verdict="reject").select_related(
            "annotation").order_by("pk"):
        mine = CorrectionPass.objects.filter(annotation_id=qc.annotation_id, kind="annotator").first()
        if mine is None or not qc.corrected_windows or qc.corrected_windows != mine.corrected_windows:
            continue
        originals = list(Window.objects.filter(caption_id=qc.annotation.caption_id).values(
            "index", "start", "end", "scene", "shot"))
        carried = carry_window_amendments(qc.corrected_windows, originals,
                                          _window_rows(WindowCorrection, mine.pk),
                                          _window_rows(WindowCorrection, qc.pk))
        if carried != qc.corrected_windows:
            CorrectionPass.objects.filter(pk=qc.pk).update(corrected_windows=carried)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0022_unsent_jobs"),
    ]

    operations = [
        migrations.RunPython(carry_amendments, migrations.RunPython.noop),
    ]
