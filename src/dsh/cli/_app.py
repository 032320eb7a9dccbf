"""The typer application behind `dsh`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .._version import __version__

app = typer.Typer(
    name="dsh",
    help="dsh: an agent harness in which everything is a plugin.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the plugin composition.", no_args_is_help=True)
app.add_typer(config_app, name="config")

ProfileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profile",
        "-p",
        help="A profile YAML layered over the default (repeatable; ./dsh.yml is read if present).",
    ),
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dsh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """dsh command line."""


def profile_files(profile: list[Path] | None) -> list[Path]:
    """`./dsh.yml` when present, then each `--profile` file, in order."""
    files: list[Path] = []
    local = Path("dsh.yml")
    if local.is_file():
        files.append(local)
    files.extend(profile or [])
    return files


@config_app.command("show")
def config_show(profile: ProfileOption = None) -> None:
    """Print the resolved plugin rows (default profile, then each layer)."""
    import yaml

    from ..kernel import CompositionError, load_profile
    from ..kernel._compose import prepare

    try:
        resolved = load_profile(profile_files(profile))
        prepare(resolved)
    except CompositionError as exc:
        typer.echo(f"dsh: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"# layers: {', '.join(resolved.sources) or '(none)'}")
    typer.echo(yaml.safe_dump(resolved.to_data(), sort_keys=False).rstrip() or "[]")


@app.command("jsonrpc")
def jsonrpc() -> None:
    """Serve the JSON-RPC SDK protocol on stdin/stdout (logs go to stderr)."""
    from ..server import main as serve_jsonrpc

    serve_jsonrpc()


def run(argv: list[str] | None = None) -> None:
    app(args=argv if argv is not None else sys.argv[1:], prog_name="dsh")
