"""The tree's arrows, read from the imports: the runtime core never reaches for a front end or a
command, the models stand alone, and one module builds sessions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imports(folder: str) -> dict[str, set[str]]:
    """Every module under ``folder`` (relative to the repository) and the modules it imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(ROOT))] = names
    return found


def offenders(folder: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return [f"{module} imports {name}" for module, names in imports(folder).items()
            if not module.startswith(allowed)
            for name in sorted(names) if name == forbidden or name.startswith(forbidden)]


FRONT_ENDS = ("assistant.app", "assistant.cli", "assistant.live", "assistant.replay", "assistant.wyoming",
              "assistant.status", "assistant.commands", "assistant.backends")


def test_every_front_end_named_exists() -> None:
    # a name that matches no module forbids nothing (assistant.satellite was one: the satellite is in wyoming)
    import importlib.util

    assert [name for name in FRONT_ENDS if importlib.util.find_spec(name) is None] == []


@pytest.mark.parametrize(("folder", "forbidden", "allowed"), [
    ("models", ("assistant", "states"), ()),  # the model runtimes know nothing of the assistant
    ("states", FRONT_ENDS, ()),  # the state machine is driven, it does not wire itself
    ("assistant/audio", ("models", "states"), ()),
    ("assistant/text", ("models", "states"), ()),
    ("assistant", ("assistant.commands",), ("assistant/cli.py", "assistant/commands/")),  # the core needs no command
])
def test_no_forbidden_arrow(folder: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert offenders(folder, forbidden, allowed) == []


def test_the_check_sees_an_arrow() -> None:
    """The check itself: the CLI does import the commands package, and it is seen."""
    assert offenders("assistant", ("assistant.commands",), ("assistant/commands/",)) != []


def test_only_the_composition_root_builds_a_session() -> None:
    builders = [str(p.relative_to(ROOT)) for folder in ("assistant", "states")
                for p in sorted((ROOT / folder).rglob("*.py"))
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Session"
                       for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert builders == ["assistant/app.py"]


def test_the_cli_only_parses_and_calls() -> None:
    """No model, state or audio device is touched by the CLI itself (it knows their errors only)."""
    errors = {"models.protocols", "models.protocols.ModelError"}
    names = imports("assistant")["assistant/cli.py"] - errors
    assert not [n for n in names if n.startswith(("models", "states", "assistant.audio.alsa"))]
