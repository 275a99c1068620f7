"""A real MCP server for the tests, written with the SDK's MCPServer (FastMCP in mcp 1.x).

    python toy.py                 stdio
    python toy.py --http PORT     streamable HTTP on 127.0.0.1:PORT, path /mcp
    python toy.py --many          200 more tools (tool_000 ... tool_199)
    python toy.py --slow-start S  sleeps S seconds before it serves

Its tools: echo, picture (a PNG), weather (structured content), readme (an embedded
resource), crash (the process exits mid-call), hang (never answers), read_note and
write_note (a file), and one whose name cannot be offered to a model.

picture, weather, readme and read_note are marked `readOnlyHint: true`; write_note has
annotations that do not say read-only (unless TOY_MARKS_FILE, read at each start, names
it: a server whose annotations change between starts); the others have none.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import EmbeddedResource
from mcp.types import ImageContent
from mcp.types import TextResourceContents
from mcp.types import ToolAnnotations
from pydantic import BaseModel

# a 1x1 PNG
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005010201a5b3e7"
        "6d0000000049454e44ae426082"
    )
).decode()

server = MCPServer("toy")
READ_ONLY = ToolAnnotations(read_only_hint=True)
# not read-only, though neither destructive: only readOnlyHint makes a tool run unasked
WRITE_NOTE = ToolAnnotations(read_only_hint=False, destructive_hint=False)


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    print(f"echo called with {len(text)} characters", file=sys.stderr, flush=True)
    return f"echo: {text}"


@server.tool(annotations=READ_ONLY)
def picture() -> ImageContent:
    """A one-pixel PNG."""
    return ImageContent(type="image", data=PIXEL, mime_type="image/png")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(annotations=READ_ONLY)
def weather(city: str) -> Weather:
    """The weather in a city, as structured content. [red]Shown as typed[/red]"""
    return Weather(city=city, celsius=21.5)


@server.tool(annotations=READ_ONLY)
def readme() -> EmbeddedResource:
    """An embedded text resource."""
    contents = TextResourceContents(
        uri="file:///README.md", mime_type="text/markdown", text="# Toy"
    )
    return EmbeddedResource(type="resource", resource=contents)


@server.tool()
def crash() -> str:
    """The server process dies in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


@server.tool(annotations=READ_ONLY)
def read_note(path: str) -> str:
    """Read a note."""
    return Path(path).read_text()


@server.tool(annotations=WRITE_NOTE)
def write_note(path: str, text: str) -> str:
    """Write a note."""
    Path(path).write_text(text)
    return f"wrote {len(text)} characters"


@server.tool(name="bad.name")
def bad_name() -> str:
    """A name a model cannot be given (a dot)."""
    return "unreachable"


def add_many(count: int) -> None:
    for i in range(count):

        def numbered(n: int = i) -> str:
            return f"tool {n}"

        server.add_tool(numbered, name=f"tool_{i:03d}", description=f"Numbered tool {i}.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--many", action="store_true")
    parser.add_argument("--slow-start", type=float, default=0.0)
    options = parser.parse_args()
    time.sleep(options.slow_start)  # a server that takes its time to come up (npx, imports)
    if pid_file := os.environ.get("TOY_PID_FILE"):  # tests check the process is stopped
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    marks = os.environ.get("TOY_MARKS_FILE")
    if marks and os.path.exists(marks) and "write_note" in Path(marks).read_text().split():
        WRITE_NOTE.read_only_hint = True
    if options.many:
        add_many(200)
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()
