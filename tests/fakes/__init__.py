"""Test doubles that stand in for things outside our control (keyring, LLM servers)."""
