"""A study's data release: the corrected captions as a dataset a lab can publish.

:func:`release_build` writes, into a folder:

- ``captions.parquet`` and ``captions.jsonl``: one row per caption with a final verdict (the
  profile's choice, :func:`scoring.profiles.final_annotations`): the clip, the model (its
  neutral alias or its name, chosen at release), the original and final overview and windows,
  the verdicts and failure modes, edit sizes, and the reviewer's decision;
- ``windows.parquet`` and ``windows.jsonl``: one row per window of those captions;
- ``README.md``: the dataset card, a YAML header (license, counts, taxonomy hash, thresholds,
  the files) and a body saying how the data was made, the taxonomy's definitions and every field.

Annotators and reviewers appear only as pseudonyms: ``person-`` and 12 hex digits of an HMAC
(SHA-256) of the account's id keyed with the study's own ``release_secret``, so a person keeps
their pseudonym from one release of the study to the next, the pseudonyms of two studies cannot
be linked, and nobody without the secret can tell who is who. The secret is never written.
Texts are written as they are: nothing is escaped into HTML (JSON Lines and Parquet carry the
characters; the card quotes no caption text).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from django.contrib.auth import get_user_model

from annotation.errors import ServiceError
from annotation.models import CandidateModel, Study
from annotation.rules.pseudonyms import pseudonym
from annotation.selectors.counted import approved_excluded_by_withdrawal
from annotation.services.taxonomy import taxonomy_modes
from scoring.metrics.exports import CorrectedCaption, size_record

if TYPE_CHECKING:
    import pyarrow as pa

LICENSES = ("CC-BY-4.0", "CC-BY-SA-4.0", "CC-BY-NC-4.0", "CC0-1.0", "ODC-By-1.0", "other")
MODEL_NAMING = ("alias", "name")
FILES = ("captions.parquet", "captions.jsonl", "windows.parquet", "windows.jsonl", "README.md")

# pyarrow (the Parquet files) and scoring.profiles (pandas) are imported by the functions that
# build a release, not with this module: the study page imports LICENSES, and the web server's
# processes should not carry them until someone downloads a release.
Field = tuple[str, "pa.DataType", str]


@cache
def caption_fields() -> list[Field]:
    """The caption table: (name, Arrow type, what it holds)."""
    import pyarrow as pa

    window, size = _window_type(), _size_fields()
    return [
        ("caption_key", pa.string(), "clip and model, `clip/model`: unique per row"),
        ("clip", pa.string(), "the clip's name"),
        ("model", pa.string(), "the model that wrote the caption (its neutral alias or its name, as released)"),
        ("original_overview", pa.string(), "the model's overview"),
        ("final_overview", pa.string(), "the overview after correction (the original where it was accepted)"),
        ("overview_verdict", pa.string(), "accept or reject"),
        ("overview_modes", pa.list_(pa.string()), "failure modes of a rejected overview (taxonomy keys)"),
        *[(f"overview_{name}", kind, f"edit size of the overview: {name.replace('_', ' ')}") for name, kind in size],
        ("original_windows", pa.list_(window), "the model's windows (start, end in seconds; scene; shot)"),
        ("final_windows", pa.list_(window), "the windows after correction: the corrected timeline where "
                                           "the segmentation was rejected, else each window as judged"),
        ("windows_rejected", pa.int64(), "how many of the model's windows were rejected"),
        ("segmentation_verdict", pa.string(), "accept or reject (the window boundaries)"),
        ("segmentation_modes", pa.list_(pa.string()), "failure modes of a rejected segmentation"),
        ("annotator", pa.string(), "the annotator's pseudonym"),
        ("reviewer", pa.string(), "the QC reviewer's pseudonym"),
        ("reviewer_decision", pa.string(), "approved (the annotator's pass is final) or amended (the reviewer's)"),
        ("guideline_version", pa.int64(), "the version of the study's guidelines the annotator's verdicts were "
                                          "given under (null: before the study had guidelines)"),
        ("review_guideline_version", pa.int64(), "the version of the study's guidelines the QC reviewer approved "
                                                 "or amended under (null: before the study had guidelines)"),
    ]


@cache
def window_fields() -> list[Field]:
    """The window table: (name, Arrow type, what it holds)."""
    import pyarrow as pa

    size = _size_fields()
    return [
        ("caption_key", pa.string(), "the caption's row in captions"),
        ("clip", pa.string(), "the clip's name"),
        ("model", pa.string(), "as in captions"),
        ("window_index", pa.int64(), "the window's position in the model's timeline (0 = first)"),
        ("original_start", pa.float64(), "seconds"),
        ("original_end", pa.float64(), "seconds"),
        ("original_scene", pa.string(), "the model's scene text"),
        ("original_shot", pa.string(), "the model's shot text"),
        ("final_start", pa.float64(), "seconds, after correction"),
        ("final_end", pa.float64(), "seconds, after correction"),
        ("final_scene", pa.string(), "after correction"),
        ("final_shot", pa.string(), "after correction"),
        ("verdict", pa.string(), "accept or reject"),
        ("modes", pa.list_(pa.string()), "failure modes of a rejected window"),
        *[(name, kind, f"edit size of scene and shot together: {name.replace('_', ' ')}") for name, kind in size],
        ("annotator", pa.string(), "the annotator's pseudonym"),
        ("reviewer", pa.string(), "the QC reviewer's pseudonym"),
    ]


def _window_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct([("start", pa.float64()), ("end", pa.float64()), ("scene", pa.string()),
                      ("shot", pa.string())])


def _size_fields() -> list[tuple[str, pa.DataType]]:
    import pyarrow as pa

    return [("words_changed", pa.int64()), ("char_similarity", pa.float64()), ("near_total", pa.bool_())]


class ReleaseError(ServiceError):
    """The release cannot be built as asked (an unknown license, nothing approved yet...)."""


def release_rows(study: Study, *, models: str = "alias") -> tuple[list[dict], list[dict]]:
    """The caption rows and the window rows of the study's release."""
    if models not in MODEL_NAMING:
        raise ReleaseError(f"models must be {' or '.join(MODEL_NAMING)}, not {models!r}.")
    from scoring.profiles import corrected_captions

    finals = corrected_captions(study)
    shown = {m.name: (m.alias if models == "alias" else m.name)
             for m in CandidateModel.objects.filter(study=study)}
    people = {u.get_username(): u.pk for u in get_user_model().objects.filter(
        username__in={c.annotator for c in finals} | {c.reviewer for c in finals if c.reviewer})}

    def who(username: str) -> str:
        return pseudonym(study.release_secret, people[username]) if username else ""

    guideline_versions = _guideline_versions(study)
    captions, windows = [], []
    for final in finals:
        model = shown[final.model]
        key = f"{final.clip}/{model}"
        annotator, reviewer = who(final.annotator), who(final.reviewer)
        rows = _window_rows(final, key=key, model=model, annotator=annotator, reviewer=reviewer)
        windows += rows
        captions.append({
            "caption_key": key, "clip": final.clip, "model": model,
            "original_overview": final.original_overview, "final_overview": final.overview,
            "overview_verdict": final.overview_verdict, "overview_modes": list(final.overview_modes),
            **{f"overview_{k}": v for k, v in size_record(final.overview_size()).items()},
            "original_windows": [{"start": r["original_start"], "end": r["original_end"],
                                  "scene": r["original_scene"], "shot": r["original_shot"]} for r in rows],
            "final_windows": [{"start": cue.start, "end": cue.end, "scene": cue.scene, "shot": cue.shot}
                              for cue in final.timeline()],
            "windows_rejected": sum(r["verdict"] == "reject" for r in rows),
            "segmentation_verdict": final.segmentation_verdict,
            "segmentation_modes": list(final.segmentation_modes),
            "annotator": annotator, "reviewer": reviewer,
            "reviewer_decision": "amended" if final.final_pass == "qc" else "approved",
            **guideline_versions.get((final.clip, final.model, final.annotator),
                                     {"guideline_version": None, "review_guideline_version": None}),
        })
    return captions, windows


def _guideline_versions(study: Study) -> dict[tuple[str, str, str], dict[str, int | None]]:
    """{(clip, model, annotator): the guideline versions of the annotator's and the reviewer's
    verdicts} for the study's approved annotations."""
    from annotation.models import Annotation, CorrectionPass

    approved = Annotation.objects.filter(caption__clip__study=study, state=Annotation.State.APPROVED)
    versions = {
        (row["caption__clip__name"], row["caption__model__name"], row["annotator__username"]): {
            "guideline_version": None, "review_guideline_version": row["review_guideline_version__number"]}
        for row in approved.values("caption__clip__name", "caption__model__name", "annotator__username",
                                   "review_guideline_version__number")
    }
    passes = CorrectionPass.objects.filter(annotation__in=approved, kind=CorrectionPass.Kind.ANNOTATOR)
    for row in passes.values("annotation__caption__clip__name", "annotation__caption__model__name",
                             "annotation__annotator__username", "guideline_version__number"):
        key = (row["annotation__caption__clip__name"], row["annotation__caption__model__name"],
               row["annotation__annotator__username"])
        if key in versions:
            versions[key]["guideline_version"] = row["guideline_version__number"]
    return versions


def _window_rows(final: CorrectedCaption, *, key: str, model: str, annotator: str,
                 reviewer: str) -> list[dict[str, Any]]:
    """The caption's window rows, in the model's order."""
    return [{
        "caption_key": key, "clip": final.clip, "model": model, "window_index": window.index,
        "original_start": window.original_start, "original_end": window.original_end,
        "original_scene": window.original_scene, "original_shot": window.original_shot,
        "final_start": window.start, "final_end": window.end,
        "final_scene": window.scene, "final_shot": window.shot,
        "verdict": window.verdict, "modes": list(window.modes),
        **size_record(final.window_size(window)),
        "annotator": annotator, "reviewer": reviewer,
    } for window in sorted(final.windows, key=lambda w: w.index)]


def _table(rows: Sequence[Mapping[str, Any]], fields: Sequence[Field]) -> pa.Table:
    import pyarrow as pa

    schema = pa.schema([(name, kind) for name, kind, _ in fields])
    return pa.Table.from_pylist(list(rows), schema=schema)


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def card_header(study: Study, *, license: str, models: str, counts: Mapping[str, int]) -> dict[str, Any]:
    taxonomy = study.taxonomy
    return {
        "license": license.lower() if license != "other" else "other",
        "pretty_name": f"{study.name}: corrected video captions",
        "language": [str(study.caption_language)] if study.caption_language != "other" else [],
        "task_categories": ["video-text-to-text"],
        "tags": ["video-captioning", "human-correction", "redline"],
        "configs": [
            {"config_name": "captions", "data_files": "captions.parquet", "default": True},
            {"config_name": "windows", "data_files": "windows.parquet"},
        ],
        "redline": {
            "study": study.slug,
            "released_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "models_shown_by": models,
            "counts": dict(counts),
            "taxonomy": {"name": taxonomy.name, "version": taxonomy.version,
                         "sha256": taxonomy.content_hash},
            "thresholds": {"word_thresholds": list(study.word_thresholds),
                           "near_total_cut": study.near_total_cut, "length_band": study.length_band},
            "assignment_design": str(study.assignment_design),
        },
    }


def quality_rows(study: Study) -> list[Any]:
    """The annotator quality rows of the study, people as their release pseudonyms."""
    from annotation.selectors.annotator_quality import annotator_quality
    from annotation.selectors.work_log import people_of

    return annotator_quality(study=study, people=people_of(study, by_name=False))


def quality_header(rows: Sequence[Any]) -> dict[str, Any]:
    """The dataset card's counts of how the annotators were trained and checked."""
    from annotation.rules.gold_agreement import MIN_ITEMS

    return {
        "annotators": sum(1 for row in rows if row.items_done),
        "qualified": sum(1 for row in rows if row.items_done and row.practice == "passed"),
        "gold_checks": sum(row.gold_checks for row in rows),
        "annotators_with_gold_agreement": sum(1 for row in rows if row.gold.overview_agreement is not None),
        "minimum_items": MIN_ITEMS,
    }


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


def _decimal(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def quality_section(rows: Sequence[Any]) -> list[str]:
    """The card's "Annotator quality" section: one line per annotator who released work."""
    from annotation.rules.gold_agreement import MIN_ITEMS

    worked = [row for row in rows if row.items_done]
    lines = [
        "## Annotator quality",
        "",
        f"{len(worked)} annotators; {sum(1 for r in worked if r.practice == 'passed')} passed the practice set. "
        "Gold agreement compares each annotator's own pass on hidden gold checks (items with an "
        "expert's gold verdict, put into their queues unannounced) with the gold verdict; agreement "
        "with others compares overview verdicts on captions two annotators corrected. A dash: fewer "
        f"than {MIN_ITEMS} items. Redline's annotator quality page defines every column.",
        "",
        "| annotator | items | practice | gold checks | gold overview agreement | gold overview κ | "
        "gold mode F1 | gold window agreement | QC returned | overview κ with others |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{row.person}` | {row.items_done} | {row.practice or '–'} | {row.gold_checks} | "
        f"{_share(row.gold.overview_agreement)} | {_decimal(row.gold.overview_kappa)} | "
        f"{_decimal(row.gold.mode_f1)} | {_share(row.gold.window_agreement)} | {_share(row.return_rate)} | "
        f"{_decimal(row.peer_kappa)} |"
        for row in worked
    ]
    return lines


def guideline_versions_used(captions: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Under which versions of the study's guidelines the released verdicts were given, with
    counts of captions: the annotators' verdicts (``guideline_version``) and the QC reviewers'
    decisions (``review_guideline_version``); version None: given before the study had guidelines."""
    used: dict[str, list[dict[str, Any]]] = {}
    for side, field in (("annotator", "guideline_version"), ("reviewer", "review_guideline_version")):
        counts: dict[int | None, int] = {}
        for row in captions:
            counts[row.get(field)] = counts.get(row.get(field), 0) + 1
        used[side] = [{"version": version, "captions": n}
                      for version, n in sorted(counts.items(), key=lambda item: (item[0] is None, item[0] or 0))]
    return used


def guideline_lines(used: Mapping[str, Sequence[Mapping[str, Any]]], saved: Mapping[int, str]) -> list[str]:
    """The card's lines naming the guideline versions the verdicts were given under (`saved`:
    each version's date)."""
    versions = sorted({entry["version"] for side in used.values() for entry in side},
                      key=lambda version: (version is None, version or 0))
    if not versions:
        return []
    count = {side: {entry["version"]: entry["captions"] for entry in entries} for side, entries in used.items()}
    lines = [
        "### Guideline versions",
        "",
        "The versions of the study's guidelines the released verdicts were given under (each caption's "
        "`guideline_version` and `review_guideline_version`).",
        "",
        "| guidelines | saved | captions annotated under it | captions QC-reviewed under it |",
        "|---|---|---|---|",
    ]
    for version in versions:
        name = "none yet (before the study had guidelines)" if version is None else f"version {version}"
        when = saved.get(version, "–") if version is not None else "–"
        lines.append(f"| {name} | {when} | {count['annotator'].get(version, 0)} | "
                     f"{count['reviewer'].get(version, 0)} |")
    return lines


def guideline_dates(study: Study) -> dict[int, str]:
    """The date each of the study's guideline versions was saved (ISO, UTC)."""
    from annotation.models import GuidelineVersion

    return {number: created.astimezone(UTC).date().isoformat() for number, created in
            GuidelineVersion.objects.filter(study=study).values_list("number", "created_at")}


def _fields_table(title: str, fields: Sequence[Field]) -> str:
    lines = [f"### {title}", "", "| field | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | `{kind}` | {meaning} |" for name, kind, meaning in fields]
    return "\n".join(lines)


def withdrawn_line(excluded: int) -> str:
    """The card's sentence on withdrawals (annotation.services.withdrawal)."""
    if not excluded:
        return "No approved annotation was left out for a withdrawal."
    return (f"{excluded} approved annotation{'s' if excluded != 1 else ''} of annotators who withdrew from the "
            f"study {'are' if excluded != 1 else 'is'} left out: participants may withdraw at any time, and "
            "their work is then excluded from every later release.")


def card_text(study: Study, header: Mapping[str, Any], quality: Sequence[Any] = ()) -> str:
    """The dataset card: the YAML header, then how the data was made, the annotators' quality
    (`quality`: annotation.selectors.annotator_quality rows, by pseudonym) with the guideline
    versions the verdicts were given under (the header's ``guideline_versions``), the taxonomy,
    the fields."""
    used = header["redline"].get("guideline_versions", {})
    guidelines = guideline_lines(used, guideline_dates(study)) if used else []
    if guidelines and not quality:
        guidelines = ["## Annotator quality", "", *guidelines]
    modes = taxonomy_modes(study.taxonomy)
    counts = header["redline"]["counts"]
    body = [
        f"# {study.name}: corrected video captions",
        "",
        f"{counts['captions']} captions of {counts['clips']} clips by {counts['models']} models, "
        f"with {counts['windows']} windows, each corrected by a human annotator and checked by a QC "
        "reviewer in Redline.",
        "",
        withdrawn_line(int(counts.get("excluded_by_withdrawal", 0))),
        "",
        "## How it was made",
        "",
        "Each caption is a model's whole-clip overview and its timeline of windows (start, end, scene "
        "text, shot text). An annotator watched the clip and post-edited the caption against the "
        "frozen failure taxonomy below: first the overview (accept, or reject with a corrected text "
        "and the failure modes), locked before the windows, then each window, then one judgement of "
        "the segmentation (the window boundaries). Annotators saw the models only under neutral "
        "aliases. A QC reviewer then approved the annotator's pass or amended it (the amended version "
        "is final); returned work was revised and reviewed again. When two annotators corrected the "
        "same caption, the earliest approved verdict is released.",
        "",
        "Edit sizes compare the final text with the model's: `words_changed` is the word-level "
        "edit cost, `char_similarity` the character similarity (0 to 1) of the normalised texts, "
        f"`near_total` whether that similarity is below the near-total cut ({study.near_total_cut}). "
        "A window's edit size measures its scene and shot texts together.",
        "",
        "Annotators and reviewers are given as pseudonyms (`person-…`), stable across releases of "
        "this study and unlinkable to accounts. Texts are exactly as written: nothing is escaped.",
        "",
        *(quality_section(quality) + [""] if quality else []),
        *(guidelines + [""] if guidelines else []),
        f"## Failure taxonomy: {study.taxonomy} (sha256 `{study.taxonomy.content_hash}`)",
        "",
        *[f"- **{mode['name']}** (`{mode['key']}`, {'caption level' if mode['level'] == 'caption' else 'any unit'}): "
          f"{mode['definition']} Test: {mode['decision_test']}" for mode in modes],
        "",
        "## Fields",
        "",
        _fields_table("captions.parquet, captions.jsonl (one row per caption)", caption_fields()),
        "",
        _fields_table("windows.parquet, windows.jsonl (one row per window)", window_fields()),
        "",
    ]
    front = yaml.safe_dump(dict(header), sort_keys=False, allow_unicode=True)
    return f"---\n{front}---\n\n" + "\n".join(body)


def release_build(*, study: Study, out_dir: str | Path, license: str, models: str = "alias") -> dict[str, Any]:
    """Write the study's release into `out_dir` (created); return its counts and file names."""
    if license not in LICENSES:
        raise ReleaseError(f"license must be one of {', '.join(LICENSES)}, not {license!r}.")
    captions, windows = release_rows(study, models=models)
    if not captions:
        raise ReleaseError(f"Study {study.name} has no approved verdict yet: there is nothing to release.")
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(_table(captions, caption_fields()), out / "captions.parquet")
    pq.write_table(_table(windows, window_fields()), out / "windows.parquet")
    _write_jsonl(out / "captions.jsonl", captions)
    _write_jsonl(out / "windows.jsonl", windows)
    counts = {"captions": len(captions), "windows": len(windows),
              "clips": len({row["clip"] for row in captions}), "models": len({row["model"] for row in captions}),
              "excluded_by_withdrawal": approved_excluded_by_withdrawal(study)}
    header = card_header(study, license=license, models=models, counts=counts)
    quality = quality_rows(study)
    header["redline"]["annotator_quality"] = quality_header(quality)
    header["redline"]["guideline_versions"] = guideline_versions_used(captions)
    (out / "README.md").write_text(card_text(study, header, quality), encoding="utf-8")
    return {"counts": counts, "files": list(FILES)}


def release_zip(*, study: Study, license: str, models: str = "alias") -> bytes:
    """The release as the bytes of one zip file, its files in a folder named after the study."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="redline-release-") as folder:
        release_build(study=study, out_dir=folder, license=license, models=models)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
            for name in FILES:
                bundle.write(Path(folder) / name, f"{study.slug}-release/{name}")
    return buffer.getvalue()
