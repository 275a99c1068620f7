"""The provider setup shared by `gsv onboard` and the chat TUI: which config writes set up
each kind of provider, a bad base URL refused clearly, the model offered by default."""

from __future__ import annotations

import pytest

from gsv_cli.provider_setup import OLLAMA_URL
from gsv_cli.provider_setup import config_writes
from gsv_cli.provider_setup import default_model
from gsv_cli.provider_setup import key_path
from gsv_core.errors import InvalidParams


def test_each_kind_of_provider_gets_its_writes() -> None:
    """A hosted provider only its key; Ollama its local URL; any other name its URL."""
    assert config_writes("openai", None, "sk-1") == [("apiKeys.openai", "sk-1")]
    assert config_writes("ollama", None, None) == [
        ("providers.ollama", {"api": "openai", "baseUrl": f"{OLLAMA_URL}/v1"})
    ]
    assert config_writes("local", "http://127.0.0.1:8000/v1/ ", "k") == [
        ("providers.local", {"api": "openai", "baseUrl": "http://127.0.0.1:8000/v1"}),
        ("providers.local.apiKey", "k"),
    ]
    assert key_path("google") == "apiKeys.google"


def test_a_missing_or_bad_base_url_is_refused() -> None:
    """A custom provider needs an http(s) URL: 400 saying so."""
    with pytest.raises(InvalidParams, match=r"http\(s\) URL, got 'ftp://h/v1'"):
        config_writes("x", "ftp://h/v1", None)
    with pytest.raises(InvalidParams, match="needs a base URL"):
        config_writes("x", "", None)


def test_the_default_model_is_a_preferred_one_else_the_first() -> None:
    assert default_model(["a", "llama3.1:8b", "gpt-5-mini"]) == "gpt-5-mini"
    assert default_model(["zeta", "alpha"]) == "zeta"
