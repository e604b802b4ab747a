"""Importing captions and references: validated whole, stored all-or-nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotation.errors import ImportRefused
from annotation.interchange import formats
from annotation.models import Caption, Clip, Reference, Study, Window
from annotation.services import bulk
from annotation.services.studies import candidate_model_get_or_create
from annotation.services.study_state import Write, study_require

META_FIELDS = {"input_tokens_per_second", "retried", "re_encoded"}
IMPORT_BATCH = 5000  # captions per batch (Django splits each INSERT further for SQLite)


@dataclass
class CaptionImportReport:
    stored: int = 0
    kept_invalid: int = 0
    models_created: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # kept-invalid records' schema errors


def study_clip_durations(study: Study) -> dict[str, float]:
    return dict(Clip.objects.filter(study=study).values_list("name", "duration"))


def study_caption_pairs(study: Study) -> AbstractSet[tuple[str, str]]:
    """The (clip name, model name) pairs of the study's captions, read model by model as asked."""
    return _StudyPairs(study)


class _StudyPairs(AbstractSet[tuple[str, str]]):
    """A study's stored (clip, model) pairs. Asking whether a pair is stored reads the clips of
    that one model, once: validating a file of one model costs one small query, not a read of
    every caption of the study (a twentieth model's file would read nineteen models' captions)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.clips_of: dict[str, set[str]] = {}

    def __contains__(self, pair: object) -> bool:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return False
        clip, model = pair
        if model not in self.clips_of:
            self.clips_of[model] = set(
                Caption.objects.filter(model__study=self.study, model__name=model).values_list(
                    "clip__name", flat=True
                )
            )
        return clip in self.clips_of[model]

    def _all(self) -> set[tuple[str, str]]:
        return set(Caption.objects.filter(clip__study=self.study).values_list("clip__name", "model__name"))

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def captions_import_jsonl(
    *,
    study: Study,
    data: bytes,
    keep_invalid: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CaptionImportReport:
    """Validate every line, then store all captions in one transaction, or none.

    Without keep_invalid any error refuses the whole file. With keep_invalid,
    records whose only errors are schema problems are stored flagged
    `invalid_kept` with those errors; an error that cannot be stored at all
    (unknown clip, impossible timeline, duplicate, ...) still refuses the file.
    """
    study_require(study, Write.CONTENT)
    result = formats.parse_captions_jsonl(
        data,
        clip_durations=study_clip_durations(study),
        existing_pairs=study_caption_pairs(study),
        keep_invalid=keep_invalid,
    )
    return captions_store(
        study=study, result=result, keep_invalid=keep_invalid, progress=progress
    )


def captions_import_clip_cc(
    *,
    study: Study,
    data: bytes,
    model: str,
    keep_invalid: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CaptionImportReport:
    """A CLIP-CC-Bench model file ({"001": text}) as overview-only captions of `model`."""
    study_require(study, Write.CONTENT)
    try:
        result = formats.parse_clip_cc_model_file(
            data,
            model=model,
            clip_durations=study_clip_durations(study),
            existing_pairs=study_caption_pairs(study),
            keep_invalid=keep_invalid,
        )
    except ValueError as exc:  # an unusable model name
        raise ImportRefused([str(exc)]) from exc
    return captions_store(study=study, result=result, keep_invalid=keep_invalid, progress=progress)


def captions_import_clip_cc_files(
    *,
    study: Study,
    files: Mapping[str, bytes],
    keep_invalid: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CaptionImportReport:
    """Several CLIP-CC-Bench model files at once, ``{model name: file bytes}``: every file is
    validated first, then all their captions are stored in one transaction, or none. An error
    names the model whose file it is in. One transaction (one commit) instead of one per file
    is most of what makes a whole benchmark's files import in well under a second."""
    study_require(study, Write.CONTENT)
    durations = study_clip_durations(study)
    pairs = study_caption_pairs(study)
    records: list[formats.CaptionRecord] = []
    errors: list[str] = []
    for model, data in files.items():
        try:
            result = formats.parse_clip_cc_model_file(
                data,
                model=model,
                clip_durations=durations,
                existing_pairs=pairs,
                keep_invalid=keep_invalid,
            )
        except ValueError as exc:  # an unusable model name
            errors.append(f"{model!r}: {exc}")
            continue
        errors.extend(
            f"{model}: {error}" for error in result.errors if not (keep_invalid and error.storable)
        )
        records.extend(result.records)
    if errors:
        raise ImportRefused(errors)
    return captions_store(
        study=study,
        result=formats.ParseResult(records=tuple(records), errors=()),
        keep_invalid=keep_invalid,
        progress=progress,
    )


def captions_store(
    *,
    study: Study,
    result: formats.ParseResult,
    keep_invalid: bool,
    progress: Callable[[int, int], None] | None = None,
) -> CaptionImportReport:
    """Store parsed captions all-or-nothing, in batches of IMPORT_BATCH; `progress` is called
    with (stored, total) after each batch."""
    study_require(study, Write.CONTENT)
    refusing = [e for e in result.errors if not (keep_invalid and e.storable)]
    if refusing:
        raise ImportRefused(result.errors)
    report = CaptionImportReport()
    with transaction.atomic():
        clips = dict(Clip.objects.filter(study=study).values_list("name", "pk"))
        models = {}
        for record in result.records:
            if record.model not in models:
                before = study.candidate_models.filter(name=record.model).exists()
                models[record.model] = candidate_model_get_or_create(study=study, name=record.model).pk
                if not before:
                    report.models_created.append(record.model)
        records = list(result.records)
        for start in range(0, len(records), IMPORT_BATCH):
            batch = records[start : start + IMPORT_BATCH]
            _captions_create(batch, clips=clips, models=models)
            if progress is not None:
                progress(start + len(batch), len(records))
        for record in records:
            report.stored += 1
            if record.schema_errors:
                report.kept_invalid += 1
                report.errors.extend(record.schema_errors)
    return report


def _captions_create(
    records: Sequence[formats.CaptionRecord], *, clips: Mapping[str, int], models: Mapping[str, int]
) -> None:
    """Store validated records, their captions then their windows; on PostgreSQL with COPY, which
    costs a fraction of building and compiling a model instance per window."""
    if bulk.copy_supported():
        _captions_copy(records, clips=clips, models=models)
    else:
        _captions_bulk_create(records, clips=clips, models=models)


def _caption_fields(record: formats.CaptionRecord) -> dict[str, Any]:
    """The caption's own columns (not its clip, model or windows), whichever way it is stored."""
    meta = dict(record.meta)
    tokens = meta.pop("input_tokens_per_second", None)
    return {
        "overview": record.overview,
        "input_tokens_per_second": float(tokens) if tokens is not None else None,
        "retried": bool(meta.pop("retried", False)),
        "re_encoded": bool(meta.pop("re_encoded", False)),
        "invalid_kept": bool(record.schema_errors),
        "validation_errors": list(record.schema_errors),
        "meta": meta,
    }


def _captions_bulk_create(
    records: Sequence[formats.CaptionRecord], *, clips: Mapping[str, int], models: Mapping[str, int]
) -> None:
    """One INSERT of captions, one of their windows (Django splits them further for SQLite)."""
    captions = [
        Caption(clip_id=clips[record.clip], model_id=models[record.model], **_caption_fields(record))
        for record in records
    ]
    Caption.objects.bulk_create(captions)
    windows = [
        Window(caption=caption, index=index, start=w.start, end=w.end, scene=w.scene, shot=w.shot)
        for caption, record in zip(captions, records, strict=True)
        for index, w in enumerate(record.windows)
    ]
    if windows:
        Window.objects.bulk_create(windows)


def _captions_copy(
    records: Sequence[formats.CaptionRecord], *, clips: Mapping[str, int], models: Mapping[str, int]
) -> None:
    """PostgreSQL: the captions' ids are taken from their sequence first, so that their windows
    can name them; then one COPY of the captions and one of their windows. The rows are those
    _captions_bulk_create stores; the window triggers check the whole COPY at once (migration
    0011)."""
    if not records:
        return
    ids = bulk.ids_reserve(model=Caption, count=len(records))
    fields = [_caption_fields(record) for record in records]
    bulk.rows_copy(
        model=Caption,
        fields=("id", "clip_id", "model_id", *fields[0]),
        rows=(
            (pk, clips[record.clip], models[record.model], *values.values())
            for pk, record, values in zip(ids, records, fields, strict=True)
        ),
    )
    bulk.rows_copy(
        model=Window,
        fields=("caption_id", "index", "start", "end", "scene", "shot"),
        rows=(
            (pk, index, w.start, w.end, w.scene, w.shot)
            for pk, record in zip(ids, records, strict=True)
            for index, w in enumerate(record.windows)
        ),
    )


@dataclass
class ReferenceImportReport:
    stored: int = 0
    already_present: int = 0


REFERENCE_FORMATS = ("jsonl", "clip-cc", "fm-v2t")


def references_import(
    *, study: Study, data: bytes, format: str = "jsonl", language: str = "en"
) -> ReferenceImportReport:
    """Parse references in one of REFERENCE_FORMATS and store them all-or-nothing."""
    study_require(study, Write.CONTENT)
    known = set(study.clips.values_list("name", flat=True))
    if format == "jsonl":
        records, errors = formats.parse_references_jsonl(data, known_clips=known)
    elif format == "clip-cc":
        records, errors = formats.parse_clip_cc_references(data, known_clips=known)
    elif format == "fm-v2t":
        try:
            records, errors = formats.parse_fmv2t_descriptions_csv(
                data, language=language, known_clips=known
            )
        except ValueError as exc:  # an unusable language code
            raise ImportRefused([str(exc)]) from exc
    else:
        raise ImportRefused([f"unknown reference format {format!r}; use one of {', '.join(REFERENCE_FORMATS)}"])
    return references_store(study=study, records=records, errors=errors)


def references_store(
    *, study: Study, records: Sequence[formats.ReferenceRecord], errors: Iterable[object] = ()
) -> ReferenceImportReport:
    """Store references all-or-nothing; one already stored (same clip, source, language, text) is skipped."""
    study_require(study, Write.CONTENT)
    errors = list(errors)
    clips = {clip.name: clip for clip in Clip.objects.filter(study=study)}
    errors.extend(
        formats.RecordError(
            line=r.line, field="clip", reason=f"unknown clip {r.clip!r} in study {study.slug!r}", storable=False
        )
        for r in records
        if r.clip not in clips
    )
    if errors:
        raise ImportRefused(errors)
    report = ReferenceImportReport()
    with transaction.atomic():
        for record in records:
            _, created = Reference.objects.get_or_create(
                clip=clips[record.clip],
                source=record.source,
                language=record.language,
                text_sha256=hashlib.sha256(record.text.encode("utf-8")).hexdigest(),
                defaults={"text": record.text},
            )
            if created:
                report.stored += 1
            else:
                report.already_present += 1
    return report
