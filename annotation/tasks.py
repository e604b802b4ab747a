"""Celery tasks of the annotation app: thin, idempotent, taking ids."""

from celery import shared_task

from annotation.jobs import TRANSIENT_ERRORS, JobTask
from annotation.services.caption_jobs import caption_import_job_fail, caption_import_job_run
from annotation.services.clips import clip_prepare_media


@shared_task(acks_late=True, autoretry_for=(OSError, *TRANSIENT_ERRORS), retry_backoff=True, max_retries=3)
def prepare_clip_media(clip_id: int) -> None:
    """Make a clip's proxy (if needed) and poster; running it twice changes nothing."""
    clip_prepare_media(clip_id=clip_id)


class CaptionImportTask(JobTask):
    job_failed = staticmethod(caption_import_job_fail)


@shared_task(
    base=CaptionImportTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=4,
)
def run_caption_import(self, job_id: int) -> str:
    """Import a caption import job's file; running it again (a retry, a redelivery) imports it
    once: a finished job is left as it is."""
    return caption_import_job_run(job_id=job_id, task_id=self.request.id or "")
