"""What a scoring job compares: the pairs of texts (items) it scores, and which metric families
run on which of them (units, :func:`plan`). This module only reads the database:
:mod:`scoring.services` runs a verdict job's plan, :mod:`scoring.chunks` cuts a study job's plan
into chunks for the workers.

**What is compared** (``ScoreResult.subject``; the first text is the candidate):

- ``overview``: the model's overview vs the final verdict's overview (the QC pass where the
  reviewer amended, else the annotator's; an accepted overview is its original text);
- ``window_scene`` / ``window_shot``: each window's original field vs the final verdict's field.
  A rejected segmentation's new timeline is not aligned with the original windows and is not
  scored;
- ``caption_vs_reference`` (study jobs only): the caption's overview vs its clip's imported
  references;
- ``caption_vs_approved`` (study jobs only; Table 1's "Approved" references): the model's overview
  of each caption with a final verdict vs the final overviews (accepted as written, or as
  corrected) of the *other* captions of its clip with a final verdict;
- ``caption_vs_gold`` (study jobs only; Table 1's "Gold" references): the same, vs the reviewer
  corrections of the other captions of the clip (their rejected overviews, as corrected). A
  caption is never scored against its own final text;
- ``matched_approved`` / ``matched_gold`` (study jobs only; Table 1's "Matched" column): for each
  clip, each pair of an accepted and a rejected caption, both scored against one identical
  reference set, the approved finals (or corrections) of the clip's other captions leaving both
  out. Key ``matched:<set>:<accepted id>:<rejected id>:<scored caption id>``.

"Final verdict" here is the one the failure profile uses: the earliest approved annotation of a
caption (:func:`scoring.profiles.final_annotations`).

A verdict job scores one final verdict (``overview`` and windows); a study job scores every final
verdict of the study and every caption that has references.

**Which metrics where.** Edit-size metrics compare an original with its correction, so they run
on the verdict subjects only. Embedding metrics (once per judge), LLMFactsF1 and families added
later run on every subject; against several references an item's value is the mean over its
references, each reference's value kept in ``detail["per_reference"]``. Reference-overlap metrics
(BLEU, METEOR, ROUGE-L, CIDEr) run only in study jobs: all captions of the study with
references (``caption_vs_reference``), and all final overviews of the study with the correction
as the one reference (``overview``; how much the verdict changed it, never a Table 1 score).
**CIDEr-D's idf comes from the study's captions** (:func:`idf_documents`): one document per
clip, holding the overviews every model wrote for it, the same for every run of the study, so
that scores against different reference sets (approved, gold, leave-both-out) share one idf, and
an item's value does not depend on which items are scored with it: a study job scores them in
chunks, and only the stale ones (:mod:`scoring.chunks`). Items with an empty text are left out
(edit size only needs one side to be non-empty).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from annotation.errors import ServiceError
from annotation.models import Annotation, Caption, Reference, Study
from annotation.rules import workflow
from annotation.selectors.counted import counted_annotations
from annotation.services.workflow import final_pass
from scoring import families
from scoring.metrics.edits import EditSizing
from scoring.metrics.registry import METRICS
from scoring.models import ScoreJob, ScoreResult

Subject = ScoreResult.Subject


@dataclass(frozen=True)
class Item:
    """One pair of texts to score, and where its results belong."""

    key: str
    subject: str
    caption_id: int
    candidate: str
    references: tuple[str, ...]
    annotation_id: int | None = None
    window_id: int | None = None
    reference_ids: tuple[int, ...] = ()
    #: The captions whose final texts are the references (Table 1's leave-out sets).
    reference_captions: tuple[int, ...] = ()
    #: The caption's clip: a study job's chunks group items by clip.
    clip_id: int | None = None


def final_texts(annotation: Annotation) -> list[Item]:
    """The verdict subjects of an approved annotation: its overview and every window field, each
    against its final text (:func:`scoring.profiles.final_of`)."""
    from scoring.profiles import final_of

    if final_pass(annotation) is None:
        raise ServiceError(f"Annotation {annotation.pk} has no final verdict yet.")
    caption = annotation.caption
    final = final_of(annotation)
    items = [
        Item(
            key=f"annotation:{annotation.pk}:overview",
            subject=Subject.OVERVIEW,
            caption_id=caption.pk,
            annotation_id=annotation.pk,
            candidate=caption.overview,
            references=(final.overview,),
            clip_id=caption.clip_id,
        )
    ]
    window_ids = {window.index: window.pk for window in caption.windows.all()}
    for window in final.windows:
        for name, subject in (("scene", Subject.WINDOW_SCENE), ("shot", Subject.WINDOW_SHOT)):
            items.append(
                Item(
                    key=f"annotation:{annotation.pk}:window:{window_ids[window.index]}:{name}",
                    subject=subject,
                    caption_id=caption.pk,
                    annotation_id=annotation.pk,
                    window_id=window_ids[window.index],
                    candidate=getattr(window, f"original_{name}"),
                    references=(getattr(window, name),),
                    clip_id=caption.clip_id,
                )
            )
    return items


def reference_items(study: Study, clip_id: int | None = None) -> list[Item]:
    """Every caption of the study (or of one clip) whose clip has references, against all."""
    references: dict[int, list[Reference]] = {}
    found_references = Reference.objects.filter(clip__study=study)
    if clip_id is not None:
        found_references = found_references.filter(clip_id=clip_id)
    for reference in found_references.order_by("pk"):
        references.setdefault(reference.clip_id, []).append(reference)
    items = []
    for caption in Caption.objects.filter(clip__study=study, clip_id__in=references).order_by("pk"):
        found = references[caption.clip_id]
        items.append(
            Item(
                key=f"caption:{caption.pk}:references",
                subject=Subject.CAPTION_VS_REFERENCE,
                caption_id=caption.pk,
                candidate=caption.overview,
                references=tuple(reference.text for reference in found),
                reference_ids=tuple(reference.pk for reference in found),
                clip_id=caption.clip_id,
            )
        )
    return items


def _final_overviews(
    study: Study, clip_id: int | None = None
) -> dict[int, list[tuple[int, str, str]]]:
    """Per clip: ``(caption id, final verdict, final overview text)`` of each caption with a
    final verdict (the profile's choice of annotation), in caption order."""
    from scoring.profiles import final_annotations, final_of

    by_clip: dict[int, list[tuple[int, str, str]]] = {}
    sizing = EditSizing.of(study)
    for annotation in final_annotations(study, clip_id=clip_id):
        final = final_of(annotation, sizing)
        caption = annotation.caption
        by_clip.setdefault(caption.clip_id, []).append((caption.pk, final.overview_verdict, final.overview))
    for finals in by_clip.values():
        finals.sort()
    return by_clip


def leave_out_items(study: Study, clip_id: int | None = None) -> dict[str, list[Item]]:
    """Table 1's reference sets, as items: ``approved``, ``gold``, ``matched_approved`` and
    ``matched_gold`` (see the module docstring), of the study or of one clip. A caption or pair
    with an empty reference set is left out (nothing to compare with)."""
    captions = Caption.objects.filter(clip__study=study)
    if clip_id is not None:
        captions = captions.filter(clip_id=clip_id)
    originals = dict(captions.values_list("pk", "overview"))
    groups: dict[str, list[Item]] = {
        "approved": [], "gold": [], "matched_approved": [], "matched_gold": []}
    subjects = {"approved": Subject.CAPTION_VS_APPROVED, "gold": Subject.CAPTION_VS_GOLD,
                "matched_approved": Subject.MATCHED_APPROVED, "matched_gold": Subject.MATCHED_GOLD}

    def reference_set(finals, name: str, without: set[int]) -> list[tuple[int, str]]:
        return [(cid, text) for cid, verdict, text in finals
                if cid not in without and (name == "approved" or verdict == "reject")]

    for clip, finals in _final_overviews(study, clip_id).items():
        for caption_id, _, _ in finals:
            for name in ("approved", "gold"):
                found = reference_set(finals, name, {caption_id})
                if found:
                    groups[name].append(Item(
                        key=f"caption:{caption_id}:{name}", subject=subjects[name],
                        caption_id=caption_id, candidate=originals[caption_id],
                        references=tuple(text for _, text in found),
                        reference_captions=tuple(cid for cid, _ in found), clip_id=clip))
        accepted = [cid for cid, verdict, _ in finals if verdict == "accept"]
        rejected = [cid for cid, verdict, _ in finals if verdict == "reject"]
        for good in accepted:
            for bad in rejected:
                for name in ("approved", "gold"):
                    found = reference_set(finals, name, {good, bad})
                    if not found:
                        continue
                    group = f"matched_{name}"
                    for scored in (good, bad):
                        groups[group].append(Item(
                            key=f"matched:{name}:{good}:{bad}:{scored}", subject=subjects[group],
                            caption_id=scored, candidate=originals[scored],
                            references=tuple(text for _, text in found),
                            reference_captions=tuple(cid for cid, _ in found), clip_id=clip))
    return groups


def idf_documents(study: Study) -> list[list[str]]:
    """CIDEr-D's idf documents of a study: per clip, the overviews its models wrote."""
    documents: dict[int, list[str]] = {}
    for clip_id, overview in Caption.objects.filter(clip__study=study).order_by(
            "clip_id", "pk").values_list("clip_id", "overview"):
        if overview.strip():
            documents.setdefault(clip_id, []).append(overview)
    return list(documents.values())


def _approved(study: Study, clip_id: int | None = None):
    approved = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    if clip_id is not None:
        approved = approved.filter(caption__clip_id=clip_id)
    return (
        approved.select_related("caption")
        .prefetch_related("passes__windows", "caption__windows")
        .order_by("pk")
    )


def _usable(item: Item, family: str) -> Item | None:
    """The item as ``family`` may score it, or None: blank texts say nothing to compare."""
    if family == "edit":
        if not item.candidate.strip() and not any(text.strip() for text in item.references):
            return None
        return item
    kept = [
        (text, rid)
        for text, rid in zip(
            item.references, item.reference_ids or [None] * len(item.references), strict=True
        )
        if text.strip()
    ]
    if not item.candidate.strip() or not kept:
        return None
    if len(kept) == len(item.references):
        return item
    return replace(
        item,
        references=tuple(text for text, _ in kept),
        reference_ids=tuple(rid for _, rid in kept if rid is not None),
    )


@dataclass
class Unit:
    """One family (with one judge) over one group of items: the unit of failure isolation."""

    family: str
    metrics: list[str]
    judge: str
    group: str
    items: list[Item]

    @property
    def corpus(self) -> bool:
        return self.family in families.CORPUS_FAMILIES

    def error_keys(self) -> list[str]:
        if self.family in families.JUDGED_FAMILIES:
            return [f"{name}@{self.judge}" for name in self.metrics]
        return list(self.metrics)


def plan(job: ScoreJob) -> list[Unit]:
    """The units of work of a job, in the order they run."""
    groups: dict[str, list[Item]] = {"overview": [], "windows": [], "caption_vs_reference": []}
    if job.kind == ScoreJob.Kind.VERDICT:
        annotations = [job.annotation]
    else:
        annotations = list(_approved(job.study, job.clip_id))
    for annotation in annotations:
        for item in final_texts(annotation):
            groups["overview" if item.subject == Subject.OVERVIEW else "windows"].append(item)
    if job.kind == ScoreJob.Kind.STUDY:
        groups["caption_vs_reference"] = reference_items(job.study, job.clip_id)
        groups.update(leave_out_items(job.study, job.clip_id))
    by_family: dict[str, list[str]] = {}
    for name in job.metrics:
        if name in METRICS:
            by_family.setdefault(families.family_of(name), []).append(name)
    units = []
    for family, names in by_family.items():
        judges = job.judges if family in families.JUDGED_FAMILIES else [""]
        for judge in judges:
            for group, items in groups.items():
                if family == "edit" and group not in ("overview", "windows"):
                    continue  # edit size compares an original with its own correction
                if family in families.CORPUS_FAMILIES and (
                    job.kind != ScoreJob.Kind.STUDY or group == "windows"
                ):
                    continue
                usable = [kept for item in items if (kept := _usable(item, family)) is not None]
                if usable:
                    units.append(Unit(family, names, judge, group, usable))
    return units

