"""Where the owner's credentials usually live, relative to the home directory: ssh and
gpg keys, cloud and cluster credentials, package registry tokens, password stores,
keyrings and browser profiles (cookies, saved passwords).

Shared by the approval preset (a file tool reading or writing one asks, wherever the
path is spelt: policy.py `CREDENTIAL_FILES`) and the node sandbox (hidden from confined
commands: gsv_core/node/sandbox/hidden.py)."""

from __future__ import annotations

import re

# on every OS
HOME_CREDENTIALS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
    ".npmrc", ".pypirc", ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml",
    ".config/gcloud", ".config/gh", ".config/hub", ".config/op", ".password-store",
    ".local/share/keyrings", ".pki",
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge", ".config/vivaldi", ".config/opera", "snap/firefox",
    "snap/chromium",
)  # fmt: skip
# on macOS, besides
MACOS_CREDENTIALS = (
    "Library/Keychains", "Library/Cookies", "Library/Application Support/Google/Chrome",
    "Library/Application Support/Firefox", "Library/Application Support/BraveSoftware",
    "Library/Application Support/Microsoft Edge", "Library/Safari",
    "Library/Group Containers/group.com.apple.notes",
)  # fmt: skip
# any of them (or anything in one), as a path ends or continues: `~/.aws/credentials`,
# `/home/me/.ssh`, `../.netrc`; matched without case (macOS folds it)
CREDENTIAL_FILES = re.compile(
    r"(^|/)(" + "|".join(re.escape(p) for p in (*HOME_CREDENTIALS, *MACOS_CREDENTIALS)) + r")(/|$)",
    re.IGNORECASE,
)
