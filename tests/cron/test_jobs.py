"""Job documents and patches: validation naming the field, spec merges."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.cron.jobs import JobState
from gsv_core.cron.jobs import new_job
from gsv_core.cron.jobs import patched_job
from gsv_core.errors import InvalidParams

AT = {"kind": "at", "atMs": 10_000}
TASK = {"mode": "task", "message": "summarise the logs"}


def doc(**fields: Any) -> dict[str, Any]:
    return {"name": "job", "schedule": AT, "spec": TASK, **fields}


def test_a_job_gets_defaults_and_normalised_fields() -> None:
    """Agent ids normalise, names trim, enabled defaults on, task options are kept."""
    job = new_job(
        doc(name="  nightly ", agentId="Ops Team", spec={**TASK, "model": "OpenAI/gpt-5",
            "thinking": "off", "timeoutSeconds": 30, "deliver": True, "channel": " whatsapp "}),
        "id-1",
        5,
    )  # fmt: skip
    assert (job.name, job.agent_id, job.enabled, job.delete_after_run) == (
        "nightly",
        "ops-team",
        True,
        False,
    )
    assert job.spec == {"mode": "task", "message": "summarise the logs", "model": "openai/gpt-5",
                        "thinking": "none", "timeoutSeconds": 30, "deliver": True,
                        "channel": "whatsapp"}  # fmt: skip
    assert job.to_wire()["state"] == {} and "description" not in job.to_wire()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": " "}, "name is required"),
        ({"spec": {"mode": "task"}}, "spec.message is required"),
        ({"spec": {"mode": "systemEvent", "text": ""}}, "spec.text is required"),
        ({"spec": {"text": "x"}}, "spec.mode is required"),
        ({"spec": "say hi"}, r"spec must be an object with a mode \(systemEvent or task\)"),
        ({"spec": {"mode": "chat", "text": "x"}}, "spec.mode must be systemEvent or task"),
        ({"spec": {**TASK, "model": "gpt5"}}, "spec.model must be provider/model-id"),
        ({"spec": {**TASK, "thinking": "loud"}}, "spec.thinking must be one of"),
        ({"spec": {**TASK, "timeoutSeconds": 0}}, "spec.timeoutSeconds must be a number"),
        ({"spec": {**TASK, "deliver": "yes"}}, "spec.deliver must be a boolean"),
        ({"enabled": "yes"}, "enabled must be true or false"),
        ({"schedule": {"kind": "every", "everyMs": 5}}, "schedule.everyMs"),
    ],
)
def test_bad_documents_name_the_field(fields: dict[str, Any], message: str) -> None:
    """Each invalid field of a CronJobCreate is reported by name."""
    with pytest.raises(InvalidParams, match=message):
        new_job(doc(**fields), "id", 0)


def test_patches_merge_specs_of_the_same_mode_and_replace_other_modes() -> None:
    """Same mode: field by field (null removes); another mode: a complete new spec."""
    job = new_job(doc(spec={**TASK, "model": "a/b"}), "id", 0)
    merged = patched_job(job, {"spec": {"mode": "task", "thinking": "high", "model": None}}, 9)
    assert merged.spec == {"mode": "task", "message": "summarise the logs", "thinking": "high"}
    assert merged.updated_at_ms == 9 and job.spec["model"] == "a/b"  # the original is untouched
    switched = patched_job(job, {"spec": {"mode": "systemEvent", "text": "ping"}}, 9)
    assert switched.spec == {"mode": "systemEvent", "text": "ping"}
    with pytest.raises(InvalidParams, match=r"patch\.spec\.text is required"):
        patched_job(job, {"spec": {"mode": "systemEvent"}}, 9)
    with pytest.raises(InvalidParams, match=r"patch\.name"):
        patched_job(job, {"name": ""}, 9)


def test_a_job_state_goes_to_the_wire_and_back_unchanged() -> None:
    """JobState.to_wire() names every field in camelCase, leaves out what is unset (0
    retries too), and from_wire() reads the same fields back."""
    state = JobState(next_run_at_ms=5, last_status="error", last_error="boom", retries=2)
    wire = state.to_wire()
    assert wire == {"nextRunAtMs": 5, "lastStatus": "error", "lastError": "boom", "retries": 2}
    assert JobState.from_wire(wire) == state
    assert JobState().to_wire() == {}
    assert JobState.from_wire({}) == JobState()
