"""Media files of sessions (images from tools and channels), stored on disk under the data
directory and referenced from messages as `mediaPath`.

Each session has its own directory, named by a hash of the session key (keys may hold any
characters); files are written atomically and named by a random id.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import uuid
from pathlib import Path

from gsv_core.errors import InvalidParams
from gsv_core.fsmodes import write_private_file
from gsv_core.protocol.messages import ImageBlock

EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "audio/ogg": "ogg",
    "audio/mpeg": "mp3",
    "application/pdf": "pdf",
}


class MediaStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    async def save_image(self, session_key: str, data: bytes, mime_type: str) -> ImageBlock:
        """Store an image; the block a message holds for it (a reference, not the bytes)."""
        path = await self.save(session_key, data, mime_type)
        return {"type": "image", "mimeType": mime_type, "mediaPath": path}

    def _session_dir(self, session_key: str) -> str:
        return hashlib.sha256(session_key.encode()).hexdigest()[:32]

    async def save(self, session_key: str, data: bytes, mime_type: str) -> str:
        """Store `data`; returns its media path (relative to the store root)."""
        name = f"{uuid.uuid4().hex}.{EXTENSIONS.get(mime_type, 'bin')}"
        relative = f"{self._session_dir(session_key)}/{name}"
        await asyncio.to_thread(self._write, self.root / relative, data)
        return relative

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        write_private_file(path, data)

    def _resolve(self, media_path: str) -> Path:
        parts = media_path.split("/")
        if len(parts) != 2 or any(p in ("", ".", "..") or "\\" in p for p in parts):
            raise InvalidParams(f"invalid media path {media_path!r}")
        return self.root / parts[0] / parts[1]

    async def load(self, media_path: str) -> bytes | None:
        """The bytes of a stored file, or None if it is gone."""
        path = self._resolve(media_path)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            return None

    async def delete_session(self, session_key: str) -> int:
        """Delete every file of a session; returns how many there were."""
        directory = self.root / self._session_dir(session_key)

        def remove() -> int:
            if not directory.is_dir():
                return 0
            count = sum(1 for _ in directory.iterdir())
            shutil.rmtree(directory)
            return count

        return await asyncio.to_thread(remove)
