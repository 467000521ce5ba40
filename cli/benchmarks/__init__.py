"""Benchmarks. Each module `cli.benchmarks.<name>` defines `run(**options) -> list[dict]`.

`workbench bench NAME [--out FILE.json]` prints the rows as a rich table and writes
`{"bench": NAME, "machine": {...}, "rows": [...]}` with `--out` (see `report.py`).
"""
