from textual.widgets import Static
from .base import WorkbenchScreen
class HistoryScreen(WorkbenchScreen):
    MODE = "history"
    def body(self):
        yield Static("todo")
