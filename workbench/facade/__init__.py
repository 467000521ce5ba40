"""The parts of the `Workbench` facade (`workbench.workbench`), one module per job: pipelines and
their versions (`pipelines.py`), runs and replays (`runs.py`), knowledge bases (`knowledge.py`),
models (`models.py`). Each part is a mixin of `Workbench` and uses the attributes its
`__init__` sets (`store`, `library`, `catalog`, `executor`, `runtime`, ...)."""
