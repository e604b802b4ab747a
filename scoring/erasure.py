"""What scoring keeps of a withdrawn person's erased annotations goes with them
(annotation.services.withdrawal.withdrawal_erase calls :func:`scores_erase` through
``ERASURE_HOOKS``, inside the erasure's transaction).

- **Their verdicts' scores**: every stored score of the erased annotations (overview and window
  subjects, whose ``detail`` may hold LLMFactsF1's facts of their text).
- **Table 1's leave-out scores of their clips**: on a clip where one of their annotations was
  approved, its final overview was a reference of the clip's other captions (and its verdict
  made the matched pairs), so those rows are derived from the erased text. A later study job
  scores them again without it (their work no longer counts).
- **What a job planned**: the texts a chunk holds (``ScoreChunk.items``) of those annotations and
  clips; a verdict job of theirs still waiting fails, saying why. A chunk already running stores
  nothing for them (``scoring.services._Run._final_rows`` and :func:`rows_not_erased`).

A closed study's scores are guarded by the database; the erasure's exception lets these deletes
through (scoring migration 0010), as it does for the annotations themselves.

**The shared cache** (``SharedCacheEntry``, :mod:`scoring.shared_cache`) forgets what it computed
from their texts too (:func:`shared_cache_erase`, the next hook, run before the texts are
cleared so that it can read them). It keeps no text, but what it keeps is derived from texts:

- a judge's **vector** of a text (of each final text, whole and sentence by sentence), under
  the SHA-256 of the text: a vector says much of its text, and the key confirms a guessed text.
  These keys are worked out again from their final texts (every splitter's sentences) and
  deleted in every judge's namespace; nobody else's vectors go;
- **METEOR's statistics** of a (hypothesis, reference) pair (counts of matches and lengths),
  under the SHA-256 of the PTB-tokenised pair. The tokens come from the Java tokeniser, which
  the erasure cannot run, so these keys cannot be worked out again: every METEOR entry stored
  since the first of their annotations became final (their final texts enter METEOR in a study
  job's leave-out sets only then) is deleted, whoever's texts it was computed from. A cache is an
  accelerator: the next job computes the others again, with the same values.

**LLMFactsF1's answers** (``LLMFACTS_CACHE_DIR``, files) hold the facts the LLM extracted from
their texts, in clear: :func:`llmfacts_cache_erase` drops them, and the checks made with them,
once the erasure has committed.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Min, Q
from django.utils import timezone

from annotation.models import Annotation, AuditEvent, Caption, Study, Withdrawal
from annotation.rules import workflow
from scoring.comparisons import final_texts
from scoring.metrics.llmfacts.pipeline import forget_texts
from scoring.metrics.sentences import SPLITTERS, sentences
from scoring.metrics.shared_cache import text_key
from scoring.models import CAPTION_SUBJECTS, ScoreChunk, ScoreJob, ScoreResult, SharedCacheEntry

ERASED = "the annotation was erased on its annotator's withdrawal"
LEAVE_OUT_SUBJECTS = [subject for subject in CAPTION_SUBJECTS if subject != "caption_vs_reference"]


def scores_erase(study: Study, annotation_ids: Sequence[int]) -> dict[str, int]:
    """Delete what scoring stored from the erased annotations of `study` (see the module) and
    return how many score rows and chunks it changed. Runs in the caller's transaction."""
    ids = list(annotation_ids)
    if not ids:
        return {"scores": 0, "chunks": 0}
    clips = set(Annotation.objects.filter(pk__in=ids, state=workflow.APPROVED)
                .values_list("caption__clip_id", flat=True))
    derived = Q(annotation_id__in=ids) | Q(subject__in=LEAVE_OUT_SUBJECTS, caption__clip_id__in=clips)
    deleted, _ = ScoreResult.objects.filter(derived, study=study).delete()
    ScoreJob.objects.filter(kind=ScoreJob.Kind.VERDICT, annotation_id__in=ids, status__in=[
        ScoreJob.Status.QUEUED, ScoreJob.Status.RUNNING]).update(
        status=ScoreJob.Status.FAILED, errors={"job": ERASED}, finished_at=timezone.now())
    changed = 0
    wanted = set(ids)
    for chunk in ScoreChunk.objects.filter(job__study=study).only("pk", "items"):
        kept = [item for item in chunk.items if not _erased(item, wanted, clips)]
        if len(kept) != len(chunk.items):
            ScoreChunk.objects.filter(pk=chunk.pk).update(items=kept)
            changed += 1
    return {"scores": deleted, "chunks": changed}


def _erased(item: dict, ids: set[int], clips: set[int]) -> bool:
    if item.get("annotation_id") in ids:
        return True
    return item.get("subject") in LEAVE_OUT_SUBJECTS and item.get("clip_id") in clips


def rows_not_erased(job: ScoreJob, rows: list[ScoreResult]) -> list[ScoreResult]:
    """The rows a chunk of `job` computed, less those derived from annotations erased after the
    job was planned (one query when nothing was erased since)."""
    erased = list(Withdrawal.objects.filter(study_id=job.study_id, erased_at__gte=job.created_at)
                  .values_list("user_id", flat=True))
    if not erased:
        return rows
    theirs = Annotation.objects.filter(caption__clip__study_id=job.study_id, annotator_id__in=erased)
    ids = set(theirs.values_list("pk", flat=True))
    clips = theirs.filter(state=workflow.APPROVED).values("caption__clip_id")
    captions = set(Caption.objects.filter(clip_id__in=clips).values_list("pk", flat=True))
    return [row for row in rows if row.annotation_id not in ids
            and not (row.subject in LEAVE_OUT_SUBJECTS and row.caption_id in captions)]


def shared_cache_erase(study: Study, annotation_ids: Sequence[int]) -> dict[str, int]:
    """Delete the shared cache's entries derived from the final texts of the erased annotations
    of `study` (see the module) and return how many of each kind went. Runs in the caller's
    transaction, before the texts are cleared."""
    texts = _final_texts_of(annotation_ids)
    if not texts:
        return {"vectors": 0, "meteor": 0}
    vectors, _ = SharedCacheEntry.objects.filter(key__in=sorted(_text_keys(texts))).delete()
    final_since = AuditEvent.objects.filter(annotation_id__in=annotation_ids, action__in=("approve", "amend")
                                            ).aggregate(first=Min("at"))["first"]
    meteor = 0
    if final_since is not None:
        from scoring.metrics.reference import METEOR_NAMESPACE  # numpy with it: not in every web process

        meteor, _ = SharedCacheEntry.objects.filter(namespace=METEOR_NAMESPACE, created_at__gte=final_since).delete()
    return {"vectors": vectors, "meteor": meteor}


def llmfacts_cache_erase(study: Study, annotation_ids: Sequence[int]) -> None:
    """Once the erasure has committed, drop the LLM's answers about the erased final texts from
    LLMFactsF1's cache (``LLMFACTS_CACHE_DIR``: its facts of them in clear, and the checks made
    with them; scoring.metrics.llmfacts.pipeline.forget_texts). Read now, before the texts are
    cleared; the files go after the commit (they are no part of the transaction)."""
    texts = _final_texts_of(annotation_ids)
    if texts:
        transaction.on_commit(lambda: _forget_answers(texts))


def _forget_answers(texts: set[str]) -> None:
    from scoring.families import llmfacts_cache

    forget_texts(texts, llmfacts_cache())


def _final_texts_of(annotation_ids: Sequence[int]) -> set[str]:
    """The final texts (overview, window scenes and shots) of the approved ones of the
    annotations, less those left as the caption had them (the model's, not the annotator's)."""
    approved = (Annotation.objects.filter(pk__in=annotation_ids, state=workflow.APPROVED)
                .select_related("caption__clip__study", "annotator", "reviewer"))
    return {text for annotation in approved for item in final_texts(annotation) for text in item.references
            if text.strip() and text != item.candidate}


def _text_keys(texts: set[str]) -> set[str]:
    """The keys a judge keeps the vectors of `texts` under: each text whole, and each of its
    sentences by every splitter (scoring.metrics.embeddings.score_text_pairs encodes both)."""
    keys = set()
    for text in texts:
        keys.add(text_key(text))
        for splitter in SPLITTERS:
            keys.update(text_key(sentence) for sentence in sentences(text, splitter))
    return keys
