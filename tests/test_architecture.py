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
              "assistant.status", "assistant.commands", "assistant.backends", "assistant.frontend")
# The commands a user runs, each its own front end: they share helpers (assistant.frontend,
# assistant.wyoming.endpoint, assistant.status.web), never one another.
ENTRY_POINTS = ("assistant.live", "assistant.replay", "assistant.wyoming.serve", "assistant.wyoming.satellite")


def test_every_front_end_named_exists() -> None:
    # a name that matches no module forbids nothing (assistant.satellite was one: the satellite is in wyoming)
    import importlib.util

    assert [name for name in FRONT_ENDS if importlib.util.find_spec(name) is None] == []


@pytest.mark.parametrize(("folder", "forbidden", "allowed"), [
    ("models", ("assistant", "states"), ()),  # the model runtimes know nothing of the assistant
    ("states", FRONT_ENDS, ()),  # the state machine is driven, it does not wire itself
    ("states", ("assistant.worker", "assistant.health", "assistant.logs"), ()),  # nor watches its own host
    ("assistant/audio", ("models", "states"), ()),
    ("assistant/text", ("models", "states"), ()),
    ("assistant", ("assistant.commands",), ("assistant/cli.py", "assistant/commands/")),  # the core needs no command
])
def test_no_forbidden_arrow(folder: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert offenders(folder, forbidden, allowed) == []


def test_no_front_end_imports_another() -> None:
    graph = module_graph()
    assert [f"{a} imports {b}" for a in ENTRY_POINTS for b in sorted(graph[a]) if b in ENTRY_POINTS] == []


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


def module_graph() -> dict[str, set[str]]:
    """Every module of assistant/, states/ and models/ and the project modules it imports, function-local
    and TYPE_CHECKING imports included (each import names the module it lands in)."""
    paths = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for folder in ("assistant", "states", "models") for p in sorted((ROOT / folder).rglob("*.py"))}

    def landing(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, names in ((m, _imported(p)) for m, p in paths.items()):
        graph[module] = {found for name in names if (found := landing(name)) is not None} - {module}
    return graph


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_circle() -> None:
    # the 19-module circle of the turn issue ran states → worker → the composition root → front ends
    # → states; the audio protocols, the played reference and the wav files were another; the states
    # and their Session were the last (the states now name the context's Protocols, states/context.py)
    assert [sorted(c) for c in circles(module_graph())] == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a.x": {"b.y"}, "b.y": {"a.x", "c.z"}, "c.z": set()}
    assert circles(graph) == [{"a.x", "b.y"}]
