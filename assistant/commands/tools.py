"""``assistant todos list|add|done|clear`` and ``assistant reminders list|cancel``: the same
database the running assistant uses (SQLite in WAL mode, so this is safe while it runs)."""

from __future__ import annotations

import argparse
from datetime import datetime

from assistant import backends
from assistant.config import Config, ConfigError
from assistant.tools.store import Store


def _store(cfg: Config) -> Store:
    return Store(cfg.data_dir() / backends.DATABASE)


def todos(cfg: Config, args: argparse.Namespace) -> int:
    with _store(cfg) as store:
        if args.action == "add":
            text = " ".join(args.words).strip()
            if not text:
                raise ConfigError("todos add: say what to add, e.g. assistant todos add 买牛奶")
            todo = store.add_todo(text, datetime.now().astimezone())
            print(f"added #{todo.id}: {todo.text}")
        elif args.action == "done":
            for word in args.words:
                found = store.find_todo(word) if not word.isdigit() else None
                todo_id = int(word) if word.isdigit() else (found.id if found else None)
                if todo_id is None or not store.mark_done(todo_id):
                    raise ConfigError(f"todos done: no open todo matches {word!r} (see: assistant todos list)")
                print(f"done #{todo_id}")
        elif args.action == "clear":
            print(f"cleared {store.clear_todos(done_only=args.done_only)} todo(s)")
        else:
            items = store.todos(include_done=args.all)
            for t in items:
                print(f"#{t.id}\t{'[x]' if t.done else '[ ]'}\t{t.text}")
            if not items:
                print("no todos")
    return 0


def reminders(cfg: Config, args: argparse.Namespace) -> int:
    with _store(cfg) as store:
        if args.action == "cancel":
            if args.ids == ["all"]:
                print(f"cancelled {store.cancel_all()} reminder(s)")
                return 0
            for rid in args.ids:
                if not rid.isdigit() or not store.cancel(int(rid)):
                    raise ConfigError(f"reminders cancel: no pending reminder #{rid} (see: assistant reminders list)")
                print(f"cancelled #{rid}")
            return 0
        pending = store.pending()
        for r in pending:
            print(f"#{r.id}\t{r.due.astimezone():%Y-%m-%d %H:%M:%S}\t{r.kind}\t{r.text}")
        if not pending:
            print("no pending reminders")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    tp = sub.add_parser("todos", parents=[common], help="the todo list (the same one the assistant keeps)")
    tp.add_argument("action", choices=("list", "add", "done", "clear"))
    tp.add_argument("words", nargs="*", help="add: the todo; done: ids or words of the todos")
    tp.add_argument("--all", action="store_true", help="list: include done todos")
    tp.add_argument("--done-only", action="store_true", help="clear: only the done ones")
    rp = sub.add_parser("reminders", parents=[common], help="pending timers and reminders")
    rp.add_argument("action", choices=("list", "cancel"))
    rp.add_argument("ids", nargs="*", help="cancel: reminder ids, or all")
