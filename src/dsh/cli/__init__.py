"""The `dsh` command line. Heavy imports happen inside `main`, not at package import."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `dsh` console script."""
    from ._app import run

    run(argv)


__all__ = ["main"]
