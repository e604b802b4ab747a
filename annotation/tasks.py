"""Celery tasks of the annotation app: thin, idempotent, taking ids."""

from celery import shared_task

from annotation.services.clips import clip_prepare_media


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=3)
def prepare_clip_media(clip_id: int) -> None:
    """Make a clip's proxy (if needed) and poster; running it twice changes nothing."""
    clip_prepare_media(clip_id=clip_id)
