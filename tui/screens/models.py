from textual.widgets import Static
from .base import WorkbenchScreen
class ModelsScreen(WorkbenchScreen):
    MODE = "models"
    def body(self):
        yield Static("todo")
