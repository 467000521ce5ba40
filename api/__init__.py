"""HTTP API (FastAPI): pipelines, knowledge bases, KServe v2 inference, OpenAI-compatible generation.

`api.app.create_app(workbench=None) -> FastAPI`; served by `workbench serve`. See docs/api.md.
"""
