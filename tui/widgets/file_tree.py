"""`FileTree`: relative file paths shown as a folder tree (works for local and remote files alike)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode


class FileTree(Tree[str]):
    """A Tree whose leaves carry their relative path as `data`; folders carry None."""

    def process_label(self, label: str | Text) -> Text:
        """Labels are data (facts, file names), never markup."""
        return super().process_label(Text(label) if isinstance(label, str) else label)

    def __init__(self, label: str = "knowledge_bases", **kwargs) -> None:
        super().__init__(label, **kwargs)
        self.show_root = False
        self.guide_depth = 2

    def set_paths(self, paths: list[str]) -> None:
        """Replace the tree with these POSIX paths (folders first, then files, each sorted)."""
        self.clear()
        folders: dict[str, TreeNode[str]] = {"": self.root}
        for path in sorted(paths, key=lambda p: (p.count("/") == 0, p)):
            parts = path.split("/")
            parent = ""
            for part in parts[:-1]:
                key = f"{parent}/{part}" if parent else part
                if key not in folders:
                    folders[key] = folders[parent].add(f"📁 {part}", expand=True)
                parent = key
            folders[parent].add_leaf(parts[-1], data=path)
        self.root.expand()
        self.cursor_line = 0

    def select_path(self, path: str) -> bool:
        """Move the cursor to the leaf for `path`; False when it is not in the tree."""
        for node in self._walk(self.root):
            if node.data == path:
                self.move_cursor(node)
                return True
        return False

    def _walk(self, node: TreeNode[str]):
        yield node
        for child in node.children:
            yield from self._walk(child)
