"""`python -m cli` runs the `workbench` command."""

from cli import main

main()
