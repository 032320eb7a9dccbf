"""The `dsh` command line. Heavy imports happen inside `main`, not at package import."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `dsh` console script."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # answered before typer and the runtime are imported
        from .._version import __version__

        print(f"dsh {__version__}")
        return
    try:
        from .._process import lighten_imports, pause_collector, resume_collector

        lighten_imports()
        pause_collector()
        try:
            from ._app import run

            run(args)
        finally:
            resume_collector()
    except KeyboardInterrupt:  # Ctrl-C before the command's own handling (while importing)
        sys.exit(130)


__all__ = ["main"]
