"""Small modal dialogs: pick one of several options, or type one line of text."""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

DIALOG_CSS = """
{cls} {{ align: center middle; }}
{cls} > Vertical {{ width: 60; height: auto; max-height: 20; border: thick $accent; background: $surface;
    padding: 0 1; }}
{cls} OptionList {{ height: auto; max-height: 14; }}
"""


class ChoiceDialog(ModalScreen[str | None]):
    """Pick one option (Enter) or cancel (Esc); returns the option id."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = DIALOG_CSS.format(cls="ChoiceDialog")

    def __init__(self, title: str, options: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text, self.options = title, options

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{escape(self.title_text)}[/b]  (enter choose · esc cancel)")
            yield OptionList(*(Option(Text(label), id=key) for key, label in self.options), id="choice-list")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.highlighted = 0 if self.options else None  # the first Enter chooses the first option
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PromptDialog(ModalScreen[str | None]):
    """Type one line (Enter accepts, Esc cancels)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = DIALOG_CSS.format(cls="PromptDialog")

    def __init__(self, title: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text, self.value, self.placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{escape(self.title_text)}[/b]  (enter accept · esc cancel)")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
