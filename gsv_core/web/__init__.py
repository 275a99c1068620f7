"""The web chat's page: plain ES modules, one stylesheet and `index.html`, shipped inside
the package and served by the gateway as they are (docs/web.md). No build step: what is in
`static/` is what the browser gets.

The gateway serves `/` as `static/index.html` and `/assets/<path>` as `static/<path>`.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
