"""Command groups whose command modules are imported only when their command runs.

`workbench kb check FILE` then imports typer, the rule language and nothing else of ours (no
model runtime, API, TUI, store or benchmarks). `workbench --help` still lists every command
(listing imports them all).
"""

from __future__ import annotations

import importlib

import click
import typer
from typer.core import TyperGroup


class LazyGroup(TyperGroup):
    """A typer group with extra commands named in `lazy`: name -> (module, kind, help).

    kind "app": the module's `app` (a `typer.Typer`) is the command group `name`;
    kind "register": the module's `register(app)` adds the command `name` (among others).
    """

    lazy: dict[str, tuple[str, str, str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in self.lazy:
            return command
        module_name, kind, help_text = self.lazy[cmd_name]
        module = importlib.import_module(module_name)
        if kind == "app":
            command = typer.main.get_group(module.app)
            command.name = cmd_name
            if help_text:
                command.help = help_text
        else:
            holder = typer.Typer()
            module.register(holder)
            command = typer.main.get_group(holder).get_command(ctx, cmd_name)
        if command is not None:
            self.add_command(command, cmd_name)
        return command


def lazy_group(entries: dict[str, tuple[str, str, str]]) -> type[LazyGroup]:
    """A `LazyGroup` class for `typer.Typer(cls=...)` with these lazy commands."""
    return type("LazyGroup", (LazyGroup,), {"lazy": dict(entries)})
