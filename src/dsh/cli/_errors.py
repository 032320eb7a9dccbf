"""How the CLI fails: one line saying what is wrong and what to do, exit code 2 for what the
user can fix (usage, configuration), and a traceback only when asked for (`--verbose` or
`DSH_LOG_LEVEL=debug`)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

import typer

EXIT_USAGE = 2
EXIT_FAILED = 1
_verbose = False


def verbose() -> bool:
    """Whether tracebacks were asked for."""
    return _verbose or os.environ.get("DSH_LOG_LEVEL", "").lower() == "debug"


class _StderrHandler(logging.Handler):
    """Writes to whatever `sys.stderr` is at the time (the chat reroutes it above its
    prompt); tracebacks only when verbose."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = f"dsh: {record.levelname.lower()}: {record.getMessage()}"
            if verbose() and record.exc_info:
                line += "\n" + logging.Formatter().formatException(record.exc_info)
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def configure_logging(verbose_flag: bool) -> None:
    global _verbose
    _verbose = verbose_flag
    level = os.environ.get("DSH_LOG_LEVEL", "DEBUG" if verbose_flag else "WARNING").upper()
    logger = logging.getLogger("dsh")
    logger.handlers[:] = [_StderrHandler()]
    logger.setLevel(level if level in logging.getLevelNamesMapping() else "WARNING")
    logger.propagate = False


def exit_with(coro: Coroutine[object, None, int]) -> NoReturn:
    """Run a command coroutine and exit with its code; a problem the user can fix prints
    one line and exits 2."""
    exit_with_sync(lambda: asyncio.run(coro))


def exit_with_sync(command: Callable[[], int]) -> NoReturn:
    """Run a command and exit with its code; a problem the user can fix prints one line
    and exits 2."""
    from ..assembly import AssemblyError
    from ..persistence import PersistenceError
    from ..profiles import CompositionError
    from ..workspace import SettingsError
    from ._runtime import CliError

    try:
        code = command()
    except (AssemblyError, CliError, CompositionError, PersistenceError, SettingsError) as exc:
        typer.echo(f"dsh: {_settings_error(exc) or exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(code)


def _settings_error(exc: BaseException) -> BaseException | None:
    """A settings file behind a plugin's failure (it names the file and the key): that is
    what the user has to fix, so it is what they see."""
    from ..workspace import SettingsError

    cause = exc.__cause__
    while cause is not None and not isinstance(cause, SettingsError):
        cause = cause.__cause__
    return cause


def run_app(app: typer.Typer, argv: list[str]) -> None:
    """Run the command table: usage errors as one line plus the usage line (exit 2),
    internal errors as one line unless verbose."""
    try:
        code = app(args=argv, prog_name="dsh", standalone_mode=False)
    except Exception as exc:
        if _is_usage_error(exc):
            _usage_error(exc)
        if verbose() or isinstance(exc, KeyboardInterrupt):
            raise
        print(f"dsh: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "(for the traceback: run again as `dsh --verbose …`, or with DSH_LOG_LEVEL=debug)",
            file=sys.stderr,
        )
        sys.exit(EXIT_FAILED)
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: BaseException) -> bool:
    # typer's click (vendored or not) raises a `UsageError` subclass for bad command lines.
    return any(cls.__name__ == "UsageError" for cls in type(exc).__mro__)


def _usage_error(exc: Any) -> NoReturn:
    if type(exc).__name__ == "NoArgsIsHelpError":  # `dsh` or `dsh sessions` alone: the help
        print(exc.format_message())
        sys.exit(EXIT_USAGE)
    context = getattr(exc, "ctx", None)
    command = context.command_path if context is not None else "dsh"
    print(f"{command}: {exc.format_message()}", file=sys.stderr)
    if context is not None:
        usage = context.get_usage().strip().replace("Usage: ", "usage: ", 1)
        print(f"{usage}   ({command} --help for more)", file=sys.stderr)
    sys.exit(EXIT_USAGE)
