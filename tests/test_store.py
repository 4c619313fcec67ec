"""The store of todos, timers and reminders: what it keeps, across restarts, concurrent writers and a kill -9."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant.tools.store import SCHEMA_VERSION, Store, StoreError

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
SHANGHAI = timezone(timedelta(hours=8))
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=SHANGHAI)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "assistant.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store(db) as s:
        yield s


def script(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(PYTHON), "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_todos_add_list_done_clear(store: Store) -> None:
    milk = store.add_todo("买牛奶", T0)
    bread = store.add_todo("买面包", T0 + timedelta(minutes=1))
    assert (milk.text, milk.done, milk.created) == ("买牛奶", False, T0)
    assert milk.created.utcoffset() == timedelta(hours=8)
    assert [t.text for t in store.todos()] == ["买牛奶", "买面包"]

    assert store.mark_done(milk.id)
    assert not store.mark_done(milk.id)  # already done
    assert not store.mark_done(999)
    assert [t.id for t in store.todos()] == [bread.id]
    assert [(t.id, t.done) for t in store.todos(include_done=True)] == [(milk.id, True), (bread.id, False)]

    assert store.clear_todos(done_only=True) == 1
    assert [t.id for t in store.todos(include_done=True)] == [bread.id]
    assert store.clear_todos() == 1
    assert store.todos(include_done=True) == []
    assert store.add_todo("打电话", T0).id > bread.id  # ids are never reused


def test_find_todo_by_the_words_of_a_request(store: Store) -> None:
    assert store.find_todo("把买牛奶标记为完成") is None
    store.add_todo("买牛奶和面包", T0)
    milk = store.add_todo("买牛奶", T0)
    store.add_todo("给妈妈打电话", T0)
    store.add_todo("Buy Coffee", T0)
    assert store.find_todo("把买牛奶标记为完成") == milk
    found = store.find_todo("打电话那个完成了")
    assert found is not None and found.text == "给妈妈打电话"
    found = store.find_todo("buy coffee is done")
    assert found is not None and found.text == "Buy Coffee"
    assert store.find_todo("明天开会") is None
    assert store.find_todo("") is None


def test_find_todo_prefers_an_open_todo_over_a_done_one(store: Store) -> None:
    older = store.add_todo("买牛奶", T0)
    done = store.add_todo("买牛奶", T0)
    store.mark_done(done.id)
    assert store.find_todo("买牛奶") == older
    store.mark_done(older.id)
    assert store.find_todo("买牛奶") == store.todos(include_done=True)[-1]  # all done: the newest


def test_reminders_pending_due_fired_cancel(store: Store) -> None:
    late = store.add_reminder("开会", T0 + timedelta(hours=2), "reminder", T0)
    soon = store.add_reminder("泡面", T0 + timedelta(minutes=3), "timer", T0)
    mid = store.add_reminder("吃药", T0 + timedelta(hours=1), "reminder", T0)
    assert (soon.text, soon.kind, soon.due, soon.created, soon.fired, soon.cancelled) == (
        "泡面", "timer", T0 + timedelta(minutes=3), T0, None, False)
    assert [r.id for r in store.pending()] == [soon.id, mid.id, late.id]

    assert store.due(T0) == []
    assert [r.id for r in store.due(T0 + timedelta(minutes=3))] == [soon.id]  # due exactly now counts
    assert [r.id for r in store.due(T0 + timedelta(hours=1, seconds=1))] == [soon.id, mid.id]

    fired_at = T0 + timedelta(minutes=3, seconds=1)
    store.mark_fired(soon.id, fired_at)
    store.mark_fired(soon.id, fired_at + timedelta(hours=1))  # keeps the first time
    assert [r.id for r in store.pending()] == [mid.id, late.id]
    assert not store.cancel(soon.id)  # fired already

    assert store.cancel(mid.id)
    assert not store.cancel(mid.id)
    assert [r.id for r in store.pending()] == [late.id]
    assert store.due(T0 + timedelta(days=1)) == [late]

    store.close()
    with Store(store.path) as again:
        assert [r.id for r in again.pending()] == [late.id]
    conn = sqlite3.connect(store.path)
    rows = {r[0]: r[1:] for r in conn.execute("SELECT id, fired, cancelled FROM reminders")}
    conn.close()
    assert rows[soon.id] == (fired_at.isoformat(), 0)
    assert rows[mid.id] == (None, 1)


def test_due_compares_instants_across_time_zones(store: Store) -> None:
    utc = store.add_reminder("utc", datetime(2025, 3, 1, 1, 30, tzinfo=UTC), "reminder", T0)  # 09:30 in Shanghai
    local = store.add_reminder("local", T0 + timedelta(minutes=15), "reminder", T0)  # 09:15 in Shanghai
    assert [r.id for r in store.pending()] == [local.id, utc.id]
    assert [r.id for r in store.due(T0 + timedelta(minutes=20))] == [local.id]
    assert store.pending()[1].due.utcoffset() == timedelta(0)  # given back in the zone it was given in


def test_cancel_all_by_kind(store: Store) -> None:
    store.add_reminder("a", T0 + timedelta(minutes=1), "timer", T0)
    store.add_reminder("b", T0 + timedelta(minutes=2), "timer", T0)
    keep = store.add_reminder("c", T0 + timedelta(minutes=3), "reminder", T0)
    assert store.cancel_all("timer") == 2
    assert store.pending() == [keep]
    assert store.cancel_all() == 1
    assert store.pending() == []
    assert store.cancel_all() == 0


def test_bad_arguments_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="alarm"):
        store.add_reminder("x", T0, "alarm", T0)
    with pytest.raises(ValueError, match="naive"):
        store.add_todo("x", datetime(2025, 3, 1, 9, 0))
    with pytest.raises(ValueError, match="naive"):
        store.due(datetime(2025, 3, 1, 9, 0))
    assert store.todos() == [] and store.pending() == []


def test_survives_a_restart(db: Path) -> None:
    with Store(db) as first:
        todo = first.add_todo("买牛奶", T0)
        reminder = first.add_reminder("开会", T0 + timedelta(hours=1), "reminder", T0)
    with Store(db) as second:
        assert second.todos() == [todo]
        assert second.pending() == [reminder]


def test_schema_version_is_recorded(db: Path) -> None:
    Store(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store(db)


def test_threads_share_one_store(store: Store) -> None:
    def add(prefix: str) -> None:
        for i in range(100):
            store.add_todo(f"{prefix}{i}", T0)
            store.todos()

    threads = [threading.Thread(target=add, args=(p,)) for p in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.todos()) == 400


WRITER = """
import sys, time
from datetime import datetime, timezone
from pathlib import Path
from assistant.tools.store import Store
path, name, start = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
with Store(path) as store:
    for i in range(200):
        store.add_todo(f"{name} {i}", datetime.now(timezone.utc))
"""


@pytest.mark.parametrize("writers", [2, 4])
def test_concurrent_writers_lose_nothing(db: Path, writers: int) -> None:
    start = time.time() + 1.0  # all open the new database at the same instant, then write at once
    procs = [script(WRITER, str(db), f"w{n}", str(start)) for n in range(writers)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert err == ""
    with Store(db) as store:
        texts = [t.text for t in store.todos()]
    assert len(texts) == 200 * writers
    assert set(texts) == {f"w{n} {i}" for n in range(writers) for i in range(200)}


CONFIRMER = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from assistant.tools.store import Store
store = Store(Path(sys.argv[1]))
for i in range(1_000_000):
    todo = store.add_todo(f"todo {i}", datetime.now(timezone.utc))
    print(todo.id, flush=True)
"""


def test_every_confirmed_write_survives_a_kill(db: Path) -> None:
    proc = script(CONFIRMER, str(db))
    assert proc.stdout is not None
    confirmed: list[int] = []
    deadline = time.monotonic() + 60
    while len(confirmed) < 50 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        confirmed.append(int(line))
    os.kill(proc.pid, signal.SIGKILL)
    rest, err = proc.communicate(timeout=30)
    confirmed += [int(line) for line in rest.split()]  # printed before the kill: confirmed too
    assert proc.returncode == -signal.SIGKILL
    assert len(confirmed) >= 50, err
    with Store(db) as store:
        kept = {t.id for t in store.todos()}
    assert set(confirmed) <= kept
    assert len(kept) - len(confirmed) <= 1  # at most the one written but not yet printed
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_a_corrupt_file_is_one_line_naming_it(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(random.Random(0).randbytes(8192))
    with pytest.raises(StoreError) as caught:
        Store(db)
    message = str(caught.value)
    assert str(db) in message and "\n" not in message
    assert "not a database" in message


def test_a_folder_that_cannot_be_made_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path / "file" / "data" / "assistant.db"
    with pytest.raises(StoreError, match="cannot open") as caught:
        Store(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_an_unwritable_folder_is_a_store_error() -> None:
    # /proc refuses new files even to root (the tests may run as root, who writes to read-only folders).
    path = Path("/proc/tingshuo/assistant.db")
    with pytest.raises(StoreError, match="cannot open") as caught:
        Store(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_directory_in_place_of_the_file_is_a_store_error(db: Path) -> None:
    db.mkdir(parents=True)
    with pytest.raises(StoreError, match="cannot open") as caught:
        Store(db)
    assert str(db) in str(caught.value) and "\n" not in str(caught.value)


def test_a_closed_store_raises_store_error(db: Path) -> None:
    store = Store(db)
    store.close()
    store.close()  # twice is fine
    with pytest.raises(StoreError, match=str(db)):
        store.add_todo("x", T0)


FULL_DISK = """
import json, resource, signal, sys
from datetime import datetime
from pathlib import Path
from assistant.tools.answers import Tools
from assistant.tools.router import Intent
from assistant.tools.store import Store
from assistant import logs
logs.setup("error")  # on stderr: stdout is the result
db = Path(sys.argv[1])
tools = Tools(Store(db), lambda: datetime.now().astimezone())
said = [tools.answer(Intent("todo_add", {"item": f"买第{i}箱牛奶"}), "") for i in range(3)]
used = sum(p.stat().st_size for p in db.parent.iterdir())
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (used + 8192, resource.RLIM_INFINITY))
said += [tools.answer(Intent("todo_add", {"item": "长" * 1500 + str(i)}), "") for i in range(12)]
print(json.dumps(said, ensure_ascii=False))
"""


def test_a_full_disk_is_said_and_nothing_confirmed_is_lost(db: Path) -> None:
    import json
    import sys

    from assistant.tools.answers import NOT_SAVED

    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(db)], cwd=root, capture_output=True, text=True,
                            timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(root)})
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout)
    assert said[-1] == NOT_SAVED and "Traceback" not in result.stderr
    confirmed = [s.removeprefix("好的，已记下待办：").removesuffix("。") for s in said if s.startswith("好的，已记下")]
    assert len(confirmed) >= 3
    assert [t.text for t in Store(db).todos()] == confirmed  # every confirmed todo is there, nothing else
