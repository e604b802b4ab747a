"""Table 1's reference sets: approved, gold and leave-both-out (matched) subjects."""

from django.db import migrations, models

SUBJECTS = [
    ("overview", "overview: original vs final"),
    ("window_scene", "window scene: original vs final"),
    ("window_shot", "window shot: original vs final"),
    ("caption_vs_reference", "caption overview vs references"),
    ("caption_vs_approved",
     "caption overview vs the approved final overviews of the clip's other captions"),
    ("caption_vs_gold",
     "caption overview vs the reviewer corrections of the clip's other captions"),
    ("matched_approved", "accepted-rejected pair vs approved finals, leaving both out"),
    ("matched_gold", "accepted-rejected pair vs corrections, leaving both out"),
]
CAPTION_SUBJECTS = ["caption_vs_reference", "caption_vs_approved", "caption_vs_gold",
                    "matched_approved", "matched_gold"]


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0005_annotation_state_transitions"),
        ("scoring", "0001_initial"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="scoreresult",
            name="score_result_verdict_subjects_have_annotation",
        ),
        migrations.AlterField(
            model_name="scoreresult",
            name="subject",
            field=models.CharField(choices=SUBJECTS, max_length=30),
        ),
        migrations.AddConstraint(
            model_name="scoreresult",
            constraint=models.CheckConstraint(
                condition=models.Q(subject__in=CAPTION_SUBJECTS, annotation__isnull=True)
                | (~models.Q(subject__in=CAPTION_SUBJECTS) & models.Q(annotation__isnull=False)),
                name="score_result_verdict_subjects_have_annotation",
            ),
        ),
    ]
