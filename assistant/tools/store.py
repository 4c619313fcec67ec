"""The assistant's todos, timers and reminders, kept in one SQLite file (WAL, so the assistant and the
command line can use it at once; writers wait for each other up to ``timeout_s``).

Each write is its own ``BEGIN IMMEDIATE`` transaction, committed with ``synchronous=FULL`` before the
method returns: confirm to the user only after the call returns, and the change survives a crash or power cut.
Datetimes must be timezone-aware; they are kept as ISO-8601 text with their UTC offset (due times also as UTC
microseconds, for ordering) and come back with that same offset as a fixed-offset tzinfo (a ``ZoneInfo`` is
not kept): the caller converts if it needs to.
"""

from __future__ import annotations

import difflib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

KINDS = ("timer", "reminder")
SCHEMA_VERSION = 1
# MIGRATIONS[n] brings a database from schema version n to n + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE todos (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL,"
        " done INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL)",
        "CREATE TABLE reminders (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL,"
        " kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')), due TEXT NOT NULL, due_us INTEGER NOT NULL,"
        " created TEXT NOT NULL, fired TEXT, cancelled INTEGER NOT NULL DEFAULT 0)",
        "CREATE INDEX reminders_pending ON reminders (due_us) WHERE fired IS NULL AND cancelled = 0",
    ),
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TODO = "SELECT id, text, done, created FROM todos"
_REMINDER = "SELECT id, text, due, kind, created, fired, cancelled FROM reminders"
_PENDING = "fired IS NULL AND cancelled = 0"


class StoreError(RuntimeError):
    """The database cannot be opened, read or written; the message is one line naming the file."""


@dataclass(frozen=True)
class Todo:
    id: int
    text: str
    done: bool
    created: datetime


@dataclass(frozen=True)
class Reminder:
    id: int
    text: str
    due: datetime
    kind: str  # "timer" | "reminder"
    created: datetime
    fired: datetime | None
    cancelled: bool


def _iso(when: datetime) -> str:
    if when.utcoffset() is None:
        raise ValueError(f"naive datetime {when.isoformat()}: give it a timezone")
    return when.isoformat()


def _us(when: datetime) -> int:
    _iso(when)  # refuses a naive one
    return (when - _EPOCH) // timedelta(microseconds=1)


def _todo(row: tuple[int, str, int, str]) -> Todo:
    return Todo(row[0], row[1], bool(row[2]), datetime.fromisoformat(row[3]))


def _reminder(row: tuple[int, str, str, str, str, str | None, int]) -> Reminder:
    fired = datetime.fromisoformat(row[5]) if row[5] is not None else None
    return Reminder(row[0], row[1], datetime.fromisoformat(row[2]), row[3], datetime.fromisoformat(row[4]), fired,
                    bool(row[6]))


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: expected one of {', '.join(KINDS)}")
    return kind


def _normal(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


class Store:
    def __init__(self, path: Path, *, timeout_s: float = 5.0) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot open the assistant's database {path}: {e.strerror or e}") from None
        with self._errors("open"):
            self._db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        try:
            with self._errors("open"):
                self._db.execute(f"PRAGMA busy_timeout = {max(0, round(timeout_s * 1000))}")
                self._wal(time.monotonic() + timeout_s)
                self._db.execute("PRAGMA synchronous = FULL")
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    def _wal(self, deadline: float) -> None:
        # Turning a new file to WAL takes a lock SQLite does not wait for: retry while another opener holds it.
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL").fetchall()
                return
            except sqlite3.OperationalError as e:
                if e.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _migrate(self) -> None:
        with self._write("open") as db:
            version: int = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"cannot open the assistant's database {self.path}: its schema version {version}"
                                 f" is newer than this program's {SCHEMA_VERSION}")
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as e:
            reason = " ".join(str(e).split()) or type(e).__name__
            raise StoreError(f"cannot {action} the assistant's database {self.path}: {reason}") from None

    @contextmanager
    def _write(self, action: str = "write") -> Iterator[sqlite3.Connection]:
        """One transaction, committed (durably) on leaving the block, or rolled back if anything fails."""
        with self._lock, self._errors(action):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors("read"):
            yield self._db

    # todos

    def add_todo(self, text: str, now: datetime) -> Todo:
        row = (text, _iso(now))
        with self._write() as db:
            cur = db.execute("INSERT INTO todos (text, created) VALUES (?, ?)", row)
            return _todo(db.execute(f"{_TODO} WHERE id = ?", (cur.lastrowid,)).fetchone())

    def todos(self, *, include_done: bool = False) -> list[Todo]:
        where = "" if include_done else " WHERE done = 0"
        with self._read() as db:
            return [_todo(row) for row in db.execute(f"{_TODO}{where} ORDER BY id")]

    def mark_done(self, todo_id: int) -> bool:
        """True if an open todo was marked done."""
        with self._write() as db:
            return db.execute("UPDATE todos SET done = 1 WHERE id = ? AND done = 0", (todo_id,)).rowcount > 0

    def find_todo(self, words: str) -> Todo | None:
        """The todo sharing the longest run of characters with ``words`` (at least 2, or a whole 1-character
        todo), ignoring case, spaces and punctuation; ties go to the todo most covered, then open, then newest.
        So "把买牛奶标记为完成" finds "买牛奶" before "买牛奶和面包" or "牛奶"."""
        wanted = _normal(words)
        best: tuple[tuple[int, float, bool, int], Todo] | None = None
        for todo in self.todos(include_done=True) if wanted else []:
            text = _normal(todo.text)
            common = difflib.SequenceMatcher(None, wanted, text, autojunk=False).find_longest_match().size
            score = (common, common / max(1, len(text)), not todo.done, todo.id)
            if common >= max(1, min(2, len(text), len(wanted))) and (best is None or score > best[0]):
                best = score, todo
        return best[1] if best else None

    def clear_todos(self, *, done_only: bool = False) -> int:
        """Delete the todos (only the done ones if ``done_only``); the number deleted."""
        with self._write() as db:
            return db.execute("DELETE FROM todos" + (" WHERE done = 1" if done_only else "")).rowcount

    # timers and reminders

    def add_reminder(self, text: str, due: datetime, kind: str, now: datetime) -> Reminder:
        row = (text, _kind(kind), _iso(due), _us(due), _iso(now))
        with self._write() as db:
            cur = db.execute("INSERT INTO reminders (text, kind, due, due_us, created) VALUES (?, ?, ?, ?, ?)", row)
            return _reminder(db.execute(f"{_REMINDER} WHERE id = ?", (cur.lastrowid,)).fetchone())

    def pending(self) -> list[Reminder]:
        """Neither fired nor cancelled, soonest first."""
        with self._read() as db:
            return [_reminder(row) for row in db.execute(f"{_REMINDER} WHERE {_PENDING} ORDER BY due_us, id")]

    def due(self, now: datetime) -> list[Reminder]:
        """Pending and due at or before ``now``, soonest first."""
        until = _us(now)
        with self._read() as db:
            rows = db.execute(f"{_REMINDER} WHERE {_PENDING} AND due_us <= ? ORDER BY due_us, id", (until,))
            return [_reminder(row) for row in rows]

    def mark_fired(self, reminder_id: int, at: datetime) -> None:
        """Record that it went off (once: a second call keeps the first time)."""
        fired = _iso(at)
        with self._write() as db:
            db.execute("UPDATE reminders SET fired = ? WHERE id = ? AND fired IS NULL", (fired, reminder_id))

    def cancel(self, reminder_id: int) -> bool:
        """True if a pending reminder was cancelled."""
        with self._write() as db:
            return db.execute(f"UPDATE reminders SET cancelled = 1 WHERE id = ? AND {_PENDING}",
                              (reminder_id,)).rowcount > 0

    def cancel_all(self, kind: str | None = None) -> int:
        """Cancel every pending reminder (of ``kind`` if given); the number cancelled."""
        kinds = KINDS if kind is None else (_kind(kind),)
        with self._write() as db:
            return db.execute(f"UPDATE reminders SET cancelled = 1 WHERE {_PENDING} AND kind IN (?, ?)",
                              (kinds[0], kinds[-1])).rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
