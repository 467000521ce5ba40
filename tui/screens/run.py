from textual.widgets import Static
from .base import WorkbenchScreen
class RunScreen(WorkbenchScreen):
    MODE = "run"
    def body(self):
        yield Static("todo")
