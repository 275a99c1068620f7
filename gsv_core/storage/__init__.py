"""Persistence: the SQLite database and one Store per concept."""
