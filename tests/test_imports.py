"""No import cycle in `dsh`, type-only or real (#33 item 2).

The graph counts every import a module names: at the top, under `TYPE_CHECKING`, and inside
functions. Importing `a.b.c` also imports the packages `a` and `a.b`, so a module depends on
the `__init__` of every package it imports from, except the packages it is itself inside
(Python has imported those first). `from . import x` depends on the package's `__init__`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"


def modules(root: Path = SRC) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> Iterator[str]:
    """The dotted names one import statement may load (a name imported `from` a module may
    be a submodule: both it and the module are yielded)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = package.split(".")
        base = base[: len(base) - node.level + 1]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    yield module
    yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Each `dsh` module and the `dsh` modules it imports."""

    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, package):
                resolved = resolve(target) if target.split(".")[0] == "dsh" else None
                if resolved is None or resolved == name:
                    continue
                graph[name].add(resolved)
                parts = resolved.split(".")
                for i in range(1, len(parts)):
                    parent = ".".join(parts[:i])
                    if parent in found and parent != name and not name.startswith(parent + "."):
                        graph[name].add(parent)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
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


def _cycle_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One loop through `component`, to show: a shortest way from its first module back."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & component):
                if successor == start:
                    return [*paths[node], start]
                if successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not a cycle")


def test_no_import_cycle_remains() -> None:
    graph = import_graph(modules())
    found = cycles(graph)
    shown = [" -> ".join(_cycle_path(graph, c)) for c in found]
    assert not found, "import cycles:\n" + "\n".join(shown)


def test_the_graph_sees_type_only_and_function_level_imports(tmp_path: Path) -> None:
    package = tmp_path / "dsh" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "dsh" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from ._a import A\nfrom ._c import C\n")
    (package / "_a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\nA = 1\n"
    )
    (package / "_b.py").write_text("def f():\n    from ._a import A\n")
    (package / "_c.py").write_text("from . import _b\nC = 1\n")
    graph = import_graph(modules(tmp_path))
    assert graph["dsh.pkg._a"] == {"dsh.pkg._b"}
    assert graph["dsh.pkg._b"] == {"dsh.pkg._a"}
    assert graph["dsh.pkg._c"] == {"dsh.pkg", "dsh.pkg._b"}
    assert graph["dsh.pkg"] == {"dsh.pkg._a", "dsh.pkg._c"}
    found = sorted(sorted(c) for c in cycles(graph))
    assert found == [["dsh.pkg", "dsh.pkg._c"], ["dsh.pkg._a", "dsh.pkg._b"]]
