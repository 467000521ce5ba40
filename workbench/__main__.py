"""`python -m workbench` runs the CLI."""

from workbench.cli import main

main()
