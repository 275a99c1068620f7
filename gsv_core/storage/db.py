"""SQLite for the gateway: one file, WAL, one writer thread with group commit, migrations.

Writes never run on the event loop: `await db.write(fn)` hands `fn(conn)` to the writer
thread, which drains every queued write into one transaction and commits once (group
commit), then resolves each caller. A write that raises rolls back only its own savepoint;
the others in the batch still commit. `await db.read(fn)` runs on a separate read-only
connection in one of the database's own reader threads (WAL lets readers proceed while the
writer writes). Own threads, not asyncio's default pool: a crowd of runs reading their
workspace files there would queue every message's session lookup, and so its ack, behind
them (bench/crowd.py).

Work nobody waits on (the memory index of stored messages) is a catch-up write
(`when_quiet`): the writer runs it in a transaction of its own once writes pause for
`QUIET_DELAY`, or `QUIET_LIMIT` after it became due under writes that never pause, so a
crowd's message acks do not wait behind it and one catch-up serves many writes.

Schema changes are the `MIGRATIONS` list: each entry runs once, in order, tracked by
`PRAGMA user_version`. Append; never edit a released entry.

The WAL stays bounded however long the gateway runs (`Checkpoints`): SQLite's own
checkpoint after every 1000 pages copies the WAL back, `journal_size_limit` cuts the file
when it starts over, the writer truncates it once writes pause, and one that still grew
past `Checkpoints.wal_limit` under constant load is truncated right after that commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import InvalidStateError
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import TypeVar

from gsv_core.fsmodes import create_private_file
from gsv_core.fsmodes import make_private_dir
from gsv_core.fsmodes import owner_only

log = logging.getLogger(__name__)

T = TypeVar("T")
Row = tuple[Any, ...]

MIGRATIONS: list[str] = [
    # 1: gateway config overrides, one row per top-level key
    """
    CREATE TABLE config_overrides (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );
    """,
    # 2: the node catalog: every node ever connected, for inventory after it goes offline
    """
    CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        tools TEXT NOT NULL,
        runtime TEXT,
        platform TEXT,
        version TEXT,
        first_seen_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        last_connected_at INTEGER,
        last_disconnected_at INTEGER
    );
    """,
    # 3: sessions, their messages, their queue of waiting messages and their open runs
    """
    CREATE TABLE sessions (
        session_key TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        last_active_at INTEGER NOT NULL,
        label TEXT,
        settings TEXT NOT NULL DEFAULT '{}',
        reset_policy TEXT,
        last_reset_at INTEGER,
        previous_session_ids TEXT NOT NULL DEFAULT '[]',
        usage TEXT NOT NULL DEFAULT '{}',
        last_input_tokens INTEGER,
        pending_overrides TEXT,
        compaction_count INTEGER NOT NULL DEFAULT 0,
        last_compacted_at INTEGER
    );
    CREATE INDEX sessions_by_activity ON sessions (last_active_at DESC);
    CREATE TABLE messages (
        session_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_key, idx)
    );
    CREATE TABLE queue (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_key TEXT NOT NULL,
        run_id TEXT NOT NULL,
        item TEXT NOT NULL,
        queued_at INTEGER NOT NULL
    );
    CREATE INDEX queue_by_session ON queue (session_key, seq);
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        started_at INTEGER NOT NULL
    );
    """,
    # 4: channel accounts (registry, running state), the inbound journal, pairing requests
    """
    CREATE TABLE channel_accounts (
        channel TEXT NOT NULL,
        account_id TEXT NOT NULL,
        running INTEGER NOT NULL DEFAULT 0,
        config TEXT NOT NULL DEFAULT '{}',
        connected_at INTEGER,
        last_message_at INTEGER,
        PRIMARY KEY (channel, account_id)
    );
    CREATE TABLE inbound_journal (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        channel TEXT NOT NULL,
        account_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        received_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        run_id TEXT,
        session_key TEXT,
        UNIQUE (channel, account_id, message_id)
    );
    CREATE INDEX inbound_open ON inbound_journal (state, id);
    CREATE TABLE pairing_requests (
        channel TEXT NOT NULL,
        sender_id TEXT NOT NULL,
        sender_name TEXT,
        peer TEXT NOT NULL,
        account_id TEXT NOT NULL,
        first_message TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (channel, sender_id)
    );
    """,
    # 5: cron jobs (wire-shaped JSON) and their run history, trimmed per job
    """
    CREATE TABLE cron_jobs (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE TABLE cron_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL,
        ts INTEGER NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX cron_runs_by_job ON cron_runs (job_id, id);
    """,
    # 6: credentials of nodes and channel adapters (only a hash of each secret is kept) and
    # the one-time join codes that mint them
    """
    CREATE TABLE credentials (
        id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        subject TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
    );
    CREATE INDEX credentials_by_subject ON credentials (role, subject);
    CREATE TABLE join_codes (
        code_hash TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        subject TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
    );
    """,
    # 7: replies to channels not delivered yet, one row per platform message, retried
    # until sent or too old (gsv_core.channels.reply_queue)
    """
    CREATE TABLE channel_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        channel TEXT NOT NULL,
        account_id TEXT NOT NULL,
        peer TEXT NOT NULL,
        text TEXT NOT NULL,
        reply_to TEXT,
        session_key TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error TEXT
    );
    CREATE INDEX channel_outbox_by_account ON channel_outbox (channel, account_id, id);
    """,
    # 8: the usage ledger: one row per model call (gsv_core/usage/ledger.py)
    """
    CREATE TABLE usage_ledger (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        source TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        cost REAL
    );
    CREATE INDEX usage_ledger_by_time ON usage_ledger (at);
    """,
    # 9: a join code made without a subject may take an id that already has a credential
    # only when the owner said so (`auth.invite` `replace`; gsv_core/storage/credentials.py)
    """
    ALTER TABLE join_codes ADD COLUMN may_replace INTEGER NOT NULL DEFAULT 0;
    """,
    # 10: the memory index (gsv_core/memory, docs/memory.md): one row per indexed piece
    # (a message of a session, live or archived, or a chunk of a note), its words in an
    # FTS5 table over that row's text; the notes' stat when indexed, the archives already
    # read and the state of the background build. Filled by that build, not here.
    """
    CREATE TABLE memory_docs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        session_key TEXT,
        msg_idx INTEGER,
        role TEXT,
        at INTEGER,
        archive TEXT,
        path TEXT,
        line_start INTEGER,
        line_end INTEGER,
        text TEXT NOT NULL
    );
    CREATE INDEX memory_docs_by_session ON memory_docs (session_key, id);
    CREATE INDEX memory_docs_by_path ON memory_docs (agent_id, path, id);
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        text, content='memory_docs', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE memory_files (
        agent_id TEXT NOT NULL,
        path TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        PRIMARY KEY (agent_id, path)
    );
    CREATE TABLE memory_archives (
        agent_id TEXT NOT NULL,
        path TEXT NOT NULL,
        PRIMARY KEY (agent_id, path)
    );
    CREATE TABLE memory_state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 11: provider API keys set aside: rejected, or cooling down until `until` (epoch ms);
    # by a fingerprint, never the key (gsv_core/providers/keys.py)
    """
    CREATE TABLE provider_keys (
        provider TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        state TEXT NOT NULL,
        until INTEGER,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (provider, fingerprint)
    );
    """,
    # 12: optional semantic ranking (gsv_core/memory/embeddings.py): one unit float32
    # vector per indexed piece, by the model that made it (deleted with its piece by
    # gsv_core/memory/index.py)
    """
    CREATE TABLE memory_vectors (
        doc_id INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        vec BLOB NOT NULL
    );
    """,
    # 13: messages stored but not in the memory index yet: written with them, gone once
    # the catch-up write indexed them (gsv_core/memory/index.py), so a crash between the
    # two loses nothing
    """
    CREATE TABLE memory_pending (
        session_key TEXT NOT NULL,
        first_idx INTEGER NOT NULL,
        count INTEGER NOT NULL
    );
    """,
]

_STOP = object()
BUSY_TIMEOUT_MS = 5000  # how long a statement waits for a lock held by another connection
# a due catch-up write runs once no write came for QUIET_DELAY seconds, or QUIET_LIMIT
# seconds after it became due, however busy the writer is
QUIET_DELAY = 0.25
QUIET_LIMIT = 0.5
# a write and who waits for it: a task on the event loop (`write`) or the writer itself
_Job = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any] | Future[Any]"]
_Outcome = tuple["asyncio.Future[Any] | Future[Any]", bool, Any]  # (waiter, ok, result)


@dataclass
class _CatchUp:
    """A catch-up write (`Database.when_quiet`) and since when it has been due."""

    job: Callable[[sqlite3.Connection], Any]
    due: Callable[[], bool]
    committed: Callable[[Any], None] | None
    since: float | None = None

    def run(self, conn: sqlite3.Connection) -> Any:
        try:
            return self.job(conn)
        except Exception:  # nobody awaits a catch-up write to hear of it
            log.exception("catch-up write failed")
            raise

    def settled(self, future: Future[Any]) -> None:
        """After the commit (in the writer thread): tell `committed` what the job said."""
        if self.committed is not None and future.exception() is None:
            self.committed(future.result())


@dataclass(frozen=True)
class Checkpoints:
    """When the writer empties the WAL back into the database file."""

    # writes paused this long (seconds): truncate the WAL to zero bytes
    idle_seconds: float = 1.0
    # a WAL file at least this big after a commit is truncated at once, busy or not
    wal_limit: int = 32 * 1024 * 1024
    # PRAGMA journal_size_limit: what SQLite cuts the WAL file to when it starts over
    journal_limit: int = 16 * 1024 * 1024
    # how long an idle truncation waits for readers before giving up until the next pause
    # (milliseconds; the writer waits that long, so it is short)
    idle_busy_ms: int = 50


@dataclass(frozen=True)
class FileSizes:
    """Bytes on disk: the database file and its WAL."""

    database: int
    wal: int


def file_sizes(path: Path) -> FileSizes:
    """The sizes of the database at `path` and of its WAL (0 when there is none)."""

    def size(file: Path) -> int:
        try:
            return file.stat().st_size
        except FileNotFoundError:
            return 0

    return FileSizes(size(path), size(path.with_name(path.name + "-wal")))


@dataclass(frozen=True)
class _Alone:
    """A writer-thread job that cannot run inside a transaction (VACUUM, checkpoints)."""

    fn: Callable[[sqlite3.Connection], Any]
    future: Future[Any]


READER_CACHE_KB = 512  # each reader connection's page cache (the writer keeps the default)


def _open(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        # one reader per worker thread (up to six on two cores): SQLite's default 2 MB page
        # cache each would fill, as the database grows, to 12 MB that looks like a leak in a
        # long run (bench.soak); the OS keeps the file's pages cached for them anyway
        conn.execute(f"PRAGMA cache_size=-{READER_CACHE_KB}")
    else:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def _narrow_sidecars(path: Path) -> None:
    """The WAL and shared-memory files of a database created before files were 0600."""
    for suffix in ("-wal", "-shm"):
        sidecar = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            mode = sidecar.stat().st_mode
            if owner_only(mode) != mode & 0o7777:
                sidecar.chmod(owner_only(mode))


def migrate(conn: sqlite3.Connection, migrations: list[str] = MIGRATIONS) -> int:
    """Apply the migrations not yet applied; returns the schema version reached."""
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(migrations):
        raise RuntimeError(
            f"database schema version {version} is newer than this gsv ({len(migrations)}); "
            "upgrade gsv"
        )
    for number, sql in enumerate(migrations[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in sql.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version={number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("database migrated to schema version %d", number)
    return len(migrations)


READ_THREADS = 4  # reads are short, and SQLite lets go of the GIL while it works


def _settle_paced(outcomes: deque[_Outcome]) -> None:
    """Tell the waiters of a group commit on their event loop, one a pass of the loop: a
    hundred runs' writes committed together must not wake a hundred runs in one pass,
    which would answer no request meanwhile (bench/crowd.py: `config.get` p99 in the
    crowd went from 20-50 ms to 120-280 ms when they did)."""
    while outcomes:
        future, ok, value = outcomes.popleft()
        if not future.done():  # a cancelled waiter takes no pass
            _tell(future, ok, value)
            break
    if outcomes:
        asyncio.get_running_loop().call_soon(_settle_paced, outcomes)


def _tell(future: asyncio.Future[Any] | Future[Any], ok: bool, value: Any) -> None:
    # a caller that stopped waiting (cancelled) still had its write committed
    with contextlib.suppress(InvalidStateError, asyncio.InvalidStateError):
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


class Database:
    """An open gateway database. Create with `await Database.open(path)`."""

    def __init__(
        self, path: Path, writer: sqlite3.Connection, checkpoints: Checkpoints | None = None
    ) -> None:
        self.path = path
        self._writer_conn = writer
        self._checkpoints = checkpoints or Checkpoints()
        self._wal_path = path.with_name(path.name + "-wal")
        self._dirty = False  # committed since the WAL was last truncated
        self.checkpoint_count = 0  # truncating checkpoints done (idle or over the limit)
        writer.execute(f"PRAGMA journal_size_limit={self._checkpoints.journal_limit}")
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write_loop, name="gsv-db-writer", daemon=True)
        self._reader_local = threading.local()
        self._read_pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="gsv-db-read")
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._reads_idle = threading.Condition(self._readers_lock)
        self._reads_in_flight = 0
        self._closed = False
        self._catch_ups: list[_CatchUp] = []
        self._thread.start()

    @classmethod
    async def open(cls, path: Path, checkpoints: Checkpoints | None = None) -> Database:
        def setup() -> sqlite3.Connection:
            # sqlite gives the -wal and -shm files the database file's mode: creating the
            # file 0600 first keeps all three owner-only whatever the umask
            make_private_dir(path.parent)
            create_private_file(path)
            conn = _open(path)
            _narrow_sidecars(path)
            migrate(conn)
            return conn

        return cls(path, await asyncio.to_thread(setup), checkpoints)

    def sizes(self) -> FileSizes:
        """The database file and its WAL, in bytes, now (`gateway.status`)."""
        return file_sizes(self.path)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in the writer thread inside a transaction; return once committed."""
        if self._closed:
            raise RuntimeError("database is closed")
        # a future of the loop's own, told by one callback for the whole batch it commits
        # in (`_settle_paced`): a burst of writes wakes the loop once, not once per write
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put((fn, future))
        return await future

    def when_quiet(
        self,
        job: Callable[[sqlite3.Connection], T],
        due: Callable[[], bool],
        committed: Callable[[T], None] | None = None,
    ) -> None:
        """Run `job(conn)` in the writer thread, in a transaction of its own, whenever
        `due()` (asked in the writer thread) and no write came for `QUIET_DELAY`
        seconds; under writes that never pause, once it has been due `QUIET_LIMIT`
        seconds; at close, if due. Nobody awaits it: what fails is logged, and
        `committed(result)` is told once it committed. A reader that needs its work done
        first writes `job` itself (`write`)."""
        self._catch_ups.append(_CatchUp(job, due, committed))

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run one statement in the writer thread; return once committed."""
        await self.write(lambda conn: conn.execute(sql, args))

    async def scrub(self) -> tuple[int, int, int]:
        """Leave no bytes of deleted or replaced rows in the files: checkpoint the WAL and
        truncate it, VACUUM (rewrites the file without its free pages), truncate the WAL
        again. Returns the last checkpoint's (busy, wal pages, checkpointed pages)."""
        if self._closed:
            raise RuntimeError("database is closed")

        def scrub(conn: sqlite3.Connection) -> tuple[int, int, int]:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            busy, pages, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return busy, pages, done

        future: Future[tuple[int, int, int]] = Future()
        self._queue.put(_Alone(scrub, future))
        return await asyncio.wrap_future(future)

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on a read connection in one of the reader threads."""
        if self._closed:
            raise RuntimeError("database is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._read_pool, self._run_read, fn)

    async def select(
        self, convert: Callable[[Row], T], sql: str, args: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[T]:
        """Every row of one query, each through `convert` (in the reader thread too, so
        decoding JSON columns stays off the event loop). `args`: positional or named."""

        def read(conn: sqlite3.Connection) -> list[T]:
            return [convert(row) for row in conn.execute(sql, args).fetchall()]

        return await self.read(read)

    async def select_one(
        self, convert: Callable[[Row], T], sql: str, args: Sequence[Any] = ()
    ) -> T | None:
        """The first row of one query through `convert`; None when there is none."""

        def read(conn: sqlite3.Connection) -> T | None:
            row = conn.execute(sql, args).fetchone()
            return None if row is None else convert(row)

        return await self.read(read)

    def _run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # a cancelled awaiter does not stop the thread: close() waits for it to finish
        with self._reads_idle:
            if self._closed:
                raise RuntimeError("database is closed")
            self._reads_in_flight += 1
        try:
            return fn(self._reader())
        finally:
            with self._reads_idle:
                self._reads_in_flight -= 1
                self._reads_idle.notify_all()

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._reader_local, "conn", None)
        if conn is None:
            conn = _open(self.path, readonly=True)
            self._reader_local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _write_loop(self) -> None:
        while True:
            batch = [self._next_job()]
            while not self._queue.empty():  # group commit: take everything already waiting
                batch.append(self._queue.get_nowait())
            stop = any(item is _STOP for item in batch)
            jobs: list[_Job] = []
            for item in batch:
                if isinstance(item, _Alone):  # what was queued before it commits first
                    self._commit_batch(jobs)
                    jobs = []
                    self._run_alone(item)
                elif item is not _STOP:
                    jobs.append(item)
            self._commit_batch(jobs)
            # after _STOP nothing can come: every due catch-up runs now; else only one
            # due for QUIET_LIMIT already (the others wait for a pause: _next_job)
            self._catch_up(quiet=stop)
            if stop:
                return
            self._truncate_when_over_limit()

    def _catch_up(self, quiet: bool) -> None:
        """The due catch-up writes (`when_quiet`): all when `quiet`, else the overdue."""
        for catch_up in self._catch_ups:
            if not catch_up.due():
                catch_up.since = None  # a reader ran it (`write`) since it became due
                continue
            now = time.monotonic()
            if catch_up.since is None:
                catch_up.since = now
            if not quiet and now - catch_up.since < QUIET_LIMIT:
                continue
            catch_up.since = None
            future: Future[Any] = Future()
            future.add_done_callback(catch_up.settled)
            self._commit_batch([(catch_up.run, future)])

    def _next_job(self) -> Any:
        """The next queued write; after writes pause `idle_seconds`, the WAL is truncated
        first (then the wait goes on without a timeout: nothing to checkpoint). A due
        catch-up write runs first once writes pause for QUIET_DELAY."""
        if any(catch_up.due() for catch_up in self._catch_ups):
            try:
                return self._queue.get(timeout=QUIET_DELAY)
            except queue.Empty:
                self._catch_up(quiet=True)
        if not self._dirty:
            return self._queue.get()
        try:
            return self._queue.get(timeout=self._checkpoints.idle_seconds)
        except queue.Empty:
            self._truncate_wal(self._checkpoints.idle_busy_ms)
            return self._queue.get()

    def _truncate_when_over_limit(self) -> None:
        if not self._dirty:
            return
        try:
            size = os.stat(self._wal_path).st_size
        except FileNotFoundError:
            return
        if size >= self._checkpoints.wal_limit:
            self._truncate_wal(None)

    def _truncate_wal(self, busy_ms: int | None) -> None:
        """Copy the WAL back and truncate it to zero bytes. With `busy_ms`, wait at most
        that long for readers (the next pause tries again); without, as long as any write."""
        conn = self._writer_conn
        try:
            if busy_ms is not None:
                conn.execute(f"PRAGMA busy_timeout={busy_ms}")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error:
            log.exception("WAL checkpoint failed")
            return
        finally:
            if busy_ms is not None:
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not busy:
            self._dirty = False
            self.checkpoint_count += 1

    def _run_alone(self, job: _Alone) -> None:
        try:
            result = job.fn(self._writer_conn)
        except Exception as exc:
            with contextlib.suppress(InvalidStateError):
                job.future.set_exception(exc)
            return
        with contextlib.suppress(InvalidStateError):
            job.future.set_result(result)

    def _commit_batch(self, jobs: list[_Job]) -> None:
        if not jobs:
            return
        conn = self._writer_conn
        # of several jobs, each is behind a savepoint, so one bad write does not sink the
        # others; a job alone (most are) needs none: its failure rolls back the whole
        guarded = len(jobs) > 1
        outcomes: list[_Outcome] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, future in jobs:
                if guarded:
                    conn.execute("SAVEPOINT job")
                try:
                    outcomes.append((future, True, fn(conn)))
                except Exception as exc:
                    if guarded:
                        conn.execute("ROLLBACK TO job")
                    outcomes.append((future, False, exc))
                if guarded:
                    conn.execute("RELEASE job")
            if guarded or outcomes[0][1]:
                conn.execute("COMMIT")
                self._dirty = True
            else:
                conn.execute("ROLLBACK")  # the one job failed: nothing of it is kept
        except Exception as exc:
            log.exception("database commit failed")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            outcomes = [(future, False, exc) for _, future in jobs]
        on_loops: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
        for outcome in outcomes:
            future = outcome[0]
            if isinstance(future, asyncio.Future):
                on_loops.setdefault(future.get_loop(), []).append(outcome)
            else:  # the writer's own (a catch-up): told here, in the writer thread
                _tell(*outcome)
        for loop, settled in on_loops.items():
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(_settle_paced, deque(settled))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        await asyncio.to_thread(self._thread.join)
        self._writer_conn.close()
        await asyncio.to_thread(self._close_readers)
        self._read_pool.shutdown(wait=False)

    def _close_readers(self) -> None:
        with self._reads_idle:
            self._reads_idle.wait_for(lambda: self._reads_in_flight == 0)
            for conn in self._readers:
                conn.close()
            self._readers.clear()
