"""The dsh to install into a task's container when none is named: this one's source tree.

PyPI's `dsh` is another project (a shell for organizing commands), so the agent never
installs it by name: it copies the checkout the Harbor process imports dsh from, or what
`DSH_HARBOR_INSTALL` names."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

__all__ = ["source_tree", "stage_source"]

_PACKAGE = Path(__file__).resolve().parents[1]
"""`…/src/dsh` when running from a checkout."""


def _is_dsh_project(folder: Path) -> bool:
    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    except (OSError, ValueError, KeyError):
        return False
    return bool(project.get("name") == "dsh" and (folder / "src" / "dsh").is_dir())


def source_tree() -> Path | None:
    """The project folder this dsh runs from (a clone, an editable install); None for an
    installed wheel."""
    root = _PACKAGE.parents[1]
    return root if _PACKAGE.parent.name == "src" and _is_dsh_project(root) else None


def stage_source(root: Path, into: Path) -> Path:
    """What pip needs to build dsh from `root` (pyproject.toml, README.md, src/dsh; no caches,
    no .git, no .venv), copied to `into/dsh-src`; that folder."""
    if not _is_dsh_project(root):
        raise ValueError(f"{root} is not a dsh source folder (no pyproject.toml naming dsh)")
    target = into / "dsh-src"
    (target / "src").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (root / name).is_file():
            shutil.copyfile(root / name, target / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "src" / "dsh", target / "src" / "dsh", ignore=ignore)
    return target
