"""gsv_core/heap.py: the gateway's long-lived objects frozen out of the collector's full
walks, only in a process that is the gateway's own. Each case runs in a child process:
freezing is for the life of a process, and this one runs the whole suite."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_nothing_is_frozen_unless_the_process_enabled_it() -> None:
    out = run("""
        import gc
        from gsv_core import heap
        heap.loaded("openai")
        print(gc.get_freeze_count())
    """)
    assert out == "0"


def test_the_start_and_each_sdk_freeze_once() -> None:
    out = run("""
        import gc
        from gsv_core import heap
        heap.freeze_started()
        started = gc.get_freeze_count()
        brought = [[n] for n in range(5000)]  # what an import brings
        heap.loaded("openai")
        after = gc.get_freeze_count()
        more = [[n] for n in range(5000)]
        heap.loaded("openai")  # a second client of the same SDK
        print(started > 0, after >= started + 5000, gc.get_freeze_count() == after)
    """)
    assert out == "True True True"


def test_a_gateway_served_with_freeze_heap_freezes_its_heap_and_one_without_does_not() -> None:
    out = run("""
        import asyncio, gc, os, tempfile
        from pathlib import Path
        from gsv_core.gateway.server import ServerConfig, serve

        async def frozen(freeze: bool) -> int:
            with tempfile.TemporaryDirectory() as home:
                os.environ.update(GSV_HOME=home,
                                  PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
                config = ServerConfig(database=Path(home) / "gsv.db", freeze_heap=freeze)
                async with serve(config, "127.0.0.1", 0):
                    return gc.get_freeze_count()

        print(asyncio.run(frozen(False)), asyncio.run(frozen(True)) > 10_000)
    """)
    assert out == "0 True"
