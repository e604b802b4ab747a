import json

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRefused
from annotation.interchange.formats.scores import Defaults
from annotation.models import Caption, Study
from annotation.services.taxonomy import taxonomy_modes
from scoring.external_scores import external_scores_import
from scoring.metrics.video_judge import JudgeSettings, VideoJudgeError, judge_caption

METRIC = "video_llm_judge"


class Command(BaseCommand):
    help = (
        "Score every caption of a study with a Video-LLM judge: frames sampled by ffmpeg at "
        "--rate per second, sent with the caption and the study's taxonomy to an "
        "OpenAI-compatible vision endpoint (vLLM, ...), which lists the defects it finds per "
        "window and mode (JSON-schema constrained). The score, video_llm_judge, is the defect "
        "count (fewer is better), stored as an imported score: a control row of Table 1 and a "
        "judge the leaderboard can rank by. All-or-nothing: a caption that fails stops the run "
        "and nothing is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--base-url", required=True,
                            help="the endpoint, e.g. http://127.0.0.1:8000/v1")
        parser.add_argument("--model", required=True, help="the served vision-language model")
        parser.add_argument("--api-key", default="", help="a bearer token, if the server needs one")
        parser.add_argument("--rate", type=float, default=0.5,
                            help="frames per second of video (default 0.5)")
        parser.add_argument("--max-frames", type=int, default=16,
                            help="at most this many frames per clip, thinned evenly (default 16)")
        parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
        parser.add_argument("--replace", action="store_true",
                            help="replace the judge's scores from an earlier run with this model "
                                 "(without it a second run is refused)")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).select_related("taxonomy").first()
        if study is None:
            raise CommandError(f"No study with slug {options['study']!r}.")
        if options["rate"] <= 0 or options["max_frames"] < 1:
            raise CommandError("--rate must be more than 0 and --max-frames at least 1.")
        settings = JudgeSettings(base_url=options["base_url"], model=options["model"],
                                 api_key=options["api_key"], rate=options["rate"],
                                 max_frames=options["max_frames"], timeout_s=options["timeout"])
        modes = [dict(mode) for mode in taxonomy_modes(study.taxonomy)]
        captions = (Caption.objects.filter(clip__study=study).select_related("clip", "model")
                    .prefetch_related("windows").order_by("clip__name", "model__name"))
        lines = []
        for n, caption in enumerate(captions, start=1):
            clip = caption.clip
            if not clip.playable:
                raise CommandError(f"{clip.name}: the clip's video is not here; nothing stored.")
            windows = [{"start": w.start, "end": w.end, "scene": w.scene, "shot": w.shot}
                       for w in sorted(caption.windows.all(), key=lambda w: w.index)]
            try:
                defects = judge_caption(settings, video=clip.playable.path,
                                        overview=caption.overview, windows=windows, modes=modes)
            except VideoJudgeError as error:
                raise CommandError(f"{clip.name} / {caption.model.name}: {error}; nothing "
                                   "stored.") from None
            self.stdout.write(f"[{n}/{len(captions)}] {clip.name} {caption.model.alias}: "
                              f"{len(defects)} defect(s)")
            lines.append(json.dumps({"clip": clip.name, "model": caption.model.name,
                                     "value": len(defects)}))
        defaults = Defaults(metric=METRIC, direction="lower", version=settings.version,
                            source=settings.model, references="none")
        try:
            report = external_scores_import(study=study, data="\n".join(lines).encode(),
                                            defaults=defaults, replace=options["replace"])
        except ImportRefused as refused:
            raise CommandError("; ".join(refused.errors)) from None
        replacing = f", replacing {report.replaced}" if report.replaced else ""
        self.stdout.write(f"Stored {report.stored} {METRIC} score(s) ({settings.version}, "
                          f"{settings.model}){replacing}.")
