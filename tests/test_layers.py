"""The kernel names no service: it imports nothing of dsh above it, and the core services
reach their peers by key, never through `dsh.Context` (which sits above them all)."""

import ast
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "dsh"
CORE = ("kernel", "llm", "session", "prompt", "tools", "agent", "loop", "events")


def imported_modules(path: Path, package: str) -> set[str]:
    """Every dsh module `path` imports, at any level (type-only and function-level too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base) if node.level else ""
            name = node.module or ""
            found.add(f"{module}.{name}".strip(".") if node.level else name)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "dsh" or m.startswith("dsh.")}


def modules_of(folder: str) -> list[tuple[Path, str]]:
    out = []
    for path in sorted((SRC / folder).rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        package = ".".join(parts if path.name == "__init__.py" else parts[:-1])
        out.append((path, package))
    return out


def test_the_kernel_imports_nothing_above_it() -> None:
    for path, package in modules_of("kernel"):
        for module in imported_modules(path, package):
            assert module.startswith(("dsh.kernel", "dsh._lazy")), f"{path}: imports {module}"


def test_the_core_reaches_services_by_key_not_through_dsh_context() -> None:
    for folder in CORE:
        for path, package in modules_of(folder):
            if {"builtin", "adapters"} & set(path.parts):
                continue  # built-in tools and model adapters are plugins on top of the core
            modules = imported_modules(path, package)
            assert "dsh._context" not in modules, f"{path}: imports dsh._context"
            assert "dsh.profiles" not in modules, f"{path}: imports dsh.profiles"
