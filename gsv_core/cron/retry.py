"""What a failed one-shot job does next (docs/cron.md, "When a run fails"): it is tried
again after 1, 5 and 15 minutes; when the last try fails too it stays in the job list,
disabled, with its last error, until someone runs it again (`gsv cron run ID --force`),
changes it or removes it. A success clears the count. Pure: the service applies it.

Recurring jobs need none of this: their next occurrence is their retry."""

from __future__ import annotations

from gsv_core.cron.jobs import CronJob

RETRY_DELAYS_MS = (60_000, 300_000, 900_000)


def retry_at(job: CronJob, now_ms: int) -> int | None:
    """When a one-shot job whose run just failed runs again (None: no more tries)."""
    tries = job.state.retries
    if tries >= len(RETRY_DELAYS_MS):
        return None
    return now_ms + RETRY_DELAYS_MS[tries]


def gave_up(error: str | None) -> str:
    """The error a job keeps once its retries are spent."""
    tries = len(RETRY_DELAYS_MS)
    return f"{error or 'failed'} (gave up after {tries} retries)"


def needs_attention(job: CronJob) -> bool:
    """A one-shot job that gave up: listed even among enabled jobs only, so the owner
    sees that their reminder did not happen."""
    return job.one_shot and not job.enabled and job.state.last_status == "error"
