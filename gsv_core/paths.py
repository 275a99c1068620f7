"""Every on-disk location gsv uses, in one place.

With `GSV_HOME` set, everything lives under it:

    $GSV_HOME/config/config.toml     local (CLI/node) config
    $GSV_HOME/config/secrets.toml    0600 fallback secret store
    $GSV_HOME/data/gsv.db            gateway SQLite database
    $GSV_HOME/data/workspace/        agent workspace
    $GSV_HOME/logs/                  gateway.log, node.log
    $GSV_HOME/run/                   pid files

Otherwise the platform's directories (platformdirs) are used. Functions, not constants,
so a test that changes `GSV_HOME` sees the new paths at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "gsv"


@dataclass(frozen=True)
class GsvPaths:
    """The resolved directories for one root."""

    config_dir: Path
    data_dir: Path
    log_dir: Path
    run_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def secrets_file(self) -> Path:
        return self.config_dir / "secrets.toml"

    @property
    def database(self) -> Path:
        return self.data_dir / "gsv.db"

    @property
    def workspace_dir(self) -> Path:
        return self.data_dir / "workspace"

    def log_file(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def pid_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"


def gsv_home() -> Path | None:
    """The `GSV_HOME` root, if set and non-empty."""
    raw = os.environ.get("GSV_HOME", "").strip()
    return Path(raw).expanduser() if raw else None


def resolve_paths() -> GsvPaths:
    """The paths for the current environment."""
    home = gsv_home()
    if home is not None:
        return GsvPaths(
            config_dir=home / "config",
            data_dir=home / "data",
            log_dir=home / "logs",
            run_dir=home / "run",
        )
    import platformdirs  # only needed when GSV_HOME is unset

    return GsvPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME)),
        log_dir=Path(platformdirs.user_log_dir(APP_NAME)),
        run_dir=Path(platformdirs.user_state_dir(APP_NAME)) / "run",
    )
