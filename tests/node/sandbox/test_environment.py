"""A command's environment: gsv's credentials and the providers' keys are dropped."""

from __future__ import annotations

from gsv_core.node.sandbox.environment import without_credentials


def test_credentials_are_dropped_and_everything_else_stays() -> None:
    env = {
        "GSV_TOKEN": "t", "GSV_NODE_CREDENTIALS_LAPTOP": "c", "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "o", "OPENROUTER_API_KEY": "r", "GEMINI_API_KEY": "g",
        "ANTHROPIC_AUTH_TOKEN": "b", "GSV_HOME": "/h", "GSV_URL": "ws://x",
        "GSV_NODE_LOG_MAX_BYTES": "10", "PATH": "/bin", "GITHUB_TOKEN": "owner's own",
    }  # fmt: skip
    assert without_credentials(env) == {
        "GSV_HOME": "/h", "GSV_URL": "ws://x", "GSV_NODE_LOG_MAX_BYTES": "10",
        "PATH": "/bin", "GITHUB_TOKEN": "owner's own",
    }  # fmt: skip
