"""Messenger SDKs are optional extras: a channel whose library is missing says the exact
pip command instead of a traceback."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gsv_core.extras import EXTRAS
from gsv_core.extras import missing_extra


def test_a_missing_sdk_names_the_extra_to_install() -> None:
    exc = ModuleNotFoundError("No module named 'telegram'", name="telegram")
    message = missing_extra("telegram", exc)
    assert "pip install 'gsv[telegram]'" in message and "'telegram' is missing" in message
    other = missing_extra("matrix", ModuleNotFoundError("x", name="nio"))
    assert "pip install" not in other and "'nio'" in other
    sdk = missing_extra("mcp", ModuleNotFoundError("No module named 'mcp'", name="mcp"))
    assert sdk.startswith("MCP support needs its extra: pip install 'gsv[mcp]'")


def test_every_extra_named_exists_and_the_base_install_has_no_messenger_sdk() -> None:
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)
    assert set(extras["all"][0].split("[")[1].rstrip("]").split(",")) >= set(EXTRAS.values())
    base = " ".join(project["dependencies"])
    for sdk in ("python-telegram-bot", "slack-sdk", "discord.py"):
        assert sdk not in base
