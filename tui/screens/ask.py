from textual.widgets import Static
from .base import WorkbenchScreen
class AskScreen(WorkbenchScreen):
    MODE = "ask"
    def body(self):
        yield Static("todo")
