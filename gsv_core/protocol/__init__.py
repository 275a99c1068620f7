"""The wire vocabulary of docs/protocol.md: frames, method and event names, payload schemas.

Nothing outside this package spells a method or event name as a string literal.
"""

PROTOCOL_VERSION = 1
