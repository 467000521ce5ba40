"""Pipelines of the `Workbench` facade: the pipeline folder and the store's versions and stages."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.pipeline.errors import (
    PipelineNotFoundError,
    PipelineValidationError,
    PipelineVersionNotFoundError,
)
from workbench.pipeline.spec import Pipeline
from workbench.pipeline.validate import validate as validate_pipeline
from workbench.store.database import StoreError
from workbench.store.store import STAGES

RESOLVE_TTL_S = 1.0  # how long a name -> pipeline version resolution is reused by runs
REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE_SUFFIXES = (".yaml", ".yml")


def _shown(path: Path) -> str:
    """`path` relative to the working directory; outside it, by its name in the pipeline folder: a
    server's answers never carry its absolute paths."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return f"{path.name} in the pipeline folder (WORKBENCH_PIPELINE_DIR)"


def default_knowledge_base_dir() -> Path:
    """`./knowledge_bases` when it exists, else the folder shipped beside the installed package."""
    here = Path("knowledge_bases")
    return here if here.is_dir() else REPO_ROOT / "knowledge_bases"


def default_pipeline_dir() -> Path:
    here = Path("pipelines")
    return here if here.is_dir() or not (REPO_ROOT / "pipelines").is_dir() else REPO_ROOT / "pipelines"


def default_model_catalog() -> Path:
    here = Path("models/catalog.yaml")
    return here if here.is_file() else REPO_ROOT / "models" / "catalog.yaml"


@dataclass(slots=True)
class PipelineInfo:
    """A pipeline known to the workbench: stored versions, stage labels, and its file if any."""

    name: str
    versions: int = 0
    stages: dict[str, str] = field(default_factory=dict)
    latest: str | None = None
    file: str | None = None
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "versions": self.versions,
            "stages": self.stages,
            "latest": self.latest,
            "file": self.file,
            "description": self.description,
        }


class PipelinesMixin:
    """Pipelines: files, stored versions, stages, validation, resolution for runs."""

    def pipeline_files(self) -> dict[str, Path]:
        """`{name: path}` of the YAML files in the pipeline folder (name = file stem)."""
        if not self.pipeline_dir.is_dir():
            return {}
        return {p.stem: p for p in sorted(self.pipeline_dir.iterdir()) if p.suffix in PIPELINE_SUFFIXES and p.is_file()}

    def list_pipelines(self) -> list[PipelineInfo]:
        """Every pipeline in the store or the pipeline folder, by name."""
        files = self.pipeline_files()
        out: dict[str, PipelineInfo] = {}
        for name in self.store.pipeline_names():
            rows = self.store.pipeline_versions(name)
            info = PipelineInfo(name, len(rows), self.store.stages(name), rows[-1].version if rows else None)
            try:
                info.description = Pipeline.from_yaml(rows[-1].document).description if rows else None
            except PipelineValidationError:
                pass
            out[name] = info
        for name, path in files.items():
            info = out.setdefault(name, PipelineInfo(name))
            info.file = str(path)
            if info.description is None:
                try:
                    info.description = Pipeline.from_file(path).description
                except (PipelineValidationError, OSError):
                    pass
        return [out[k] for k in sorted(out)]

    def get_pipeline(self, name: str, version: str | None = None, *, shared: bool = False) -> Pipeline:
        """Resolve a pipeline: `version` (a unique prefix is enough) from the store; else the
        `production` stage; else the file `pipelines/NAME.yaml`; else the newest stored version.

        `shared=True` (runs): a file is parsed again only when it changes, and the Pipeline
        returned is shared, so it must not be modified.

        Raises:
            PipelineNotFoundError: nothing matches.
            PipelineValidationError: the document does not parse.
        """
        try:
            if version is not None:
                row = self.store.get_pipeline(name, version)
                if row is None:
                    raise PipelineVersionNotFoundError(name, version, self._stored_versions(name))
                return self._from_row(row)
            stages = self.store.stages(name)
            if "production" in stages:
                return self._from_row(self.store.get_pipeline(name, stages["production"]))
        except StoreError as exc:
            raise PipelineNotFoundError(name, str(exc)) from exc
        path = self.pipeline_files().get(name)
        if path is not None:
            return self._parse_file(path) if shared else Pipeline.from_file(path)
        row = self.store.get_pipeline(name)
        if row is None:
            raise PipelineNotFoundError(name, f"not stored and no file {_shown(self.pipeline_dir / (name + '.yaml'))}")
        return self._from_row(row)

    def _parse_file(self, path: Path) -> Pipeline:
        """`Pipeline.from_file`, parsed again only when the file's modification time or size changes
        (the parsed Pipeline is shared by runs and never mutated)."""
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        hit = self._parsed.get(str(path))
        if hit is not None and hit[0] == key:
            return hit[1]
        p = Pipeline.from_file(path)
        self._parsed[str(path)] = (key, p)
        return p

    def _from_row(self, row: Any) -> Pipeline:
        return Pipeline.from_yaml(row.document, filename=f"{row.name}@{row.version[:12]}")

    def load_pipeline_file(self, path: str | Path) -> Pipeline:
        """Parse a pipeline YAML file (structure only; see `validate`)."""
        return Pipeline.from_file(path)

    def validate(self, pipeline: Pipeline | str, *, load_models: bool = False) -> list[Any]:
        """Issues (`workbench.pipeline.Issue`, each naming node and field) of a pipeline; empty when valid."""
        p = self.get_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
        return validate_pipeline(p, self.library, self.catalog, base_dir=self._base_dir(p), load_models=load_models)

    def check(self, pipeline: Pipeline, *, load_models: bool = False) -> None:
        """Raise PipelineValidationError when `validate` finds issues."""
        issues = self.validate(pipeline, load_models=load_models)
        if issues:
            raise PipelineValidationError(issues)

    def save_pipeline(
        self, pipeline: Pipeline | str, *, validate: bool = True, stage: str | None = None, write_file: bool = False
    ) -> str:
        """Store a pipeline version (YAML text or a Pipeline); returns its version (content hash).

        Args:
            validate: refuse an invalid pipeline (PipelineValidationError, nothing stored).
            stage: also point this stage (`production` / `staging`) at the version.
            write_file: also write `pipelines/NAME.yaml`.
        """
        return self.put_pipeline(pipeline, validate=validate, stage=stage, write_file=write_file)[0]

    def put_pipeline(
        self, pipeline: Pipeline | str, *, validate: bool = True, stage: str | None = None, write_file: bool = False
    ) -> tuple[str, bool]:
        """`save_pipeline`, returning (version, created): `created` is True only for the one call that stored
        the version, also when several store the same one at the same moment (`PUT /v1/pipelines/NAME`
        answers 201 for it and 200 for the others)."""
        p = Pipeline.from_yaml(pipeline) if isinstance(pipeline, str) else pipeline
        if validate:
            self.check(p)
        text = p.to_yaml()
        created = self.store.save_pipeline(p.name, p.version, text)
        self._forget_resolutions()
        if stage is not None:
            self.promote(p.name, p.version, stage)
        if write_file:
            p.save(self.pipeline_dir / f"{p.name}.yaml")
        return p.version, created

    def _stored_versions(self, name: str) -> list[str]:
        """Full version hashes stored under `name`, newest first (for messages)."""
        return [r.version for r in reversed(self.store.pipeline_versions(name))]

    def pipeline_versions(self, name: str) -> list[dict[str, Any]]:
        """Stored versions, oldest first: `{"version", "created_at", "stages": [...]}`.

        Raises PipelineNotFoundError when nothing is stored under `name`."""
        rows = self.store.pipeline_versions(name)
        if not rows:
            raise PipelineNotFoundError(name, "no stored versions")
        stages = self.store.stages(name)
        return [
            {
                "version": r.version,
                "created_at": r.created_at.isoformat() if r.created_at else None,
                "stages": sorted(s for s, v in stages.items() if v == r.version),
            }
            for r in rows
        ]

    def promote(self, name: str, version: str, stage: str = "production") -> str:
        """Point `stage` at a stored version (rollback: promote an older one); returns the full version.

        Raises:
            PipelineNotFoundError: no such stored version; ValueError: unknown stage.
        """
        if stage not in STAGES:
            raise ValueError(f"stage {stage!r}: expected one of {', '.join(STAGES)}")
        try:
            return self.store.set_stage(name, version, stage)
        except StoreError as exc:
            raise PipelineVersionNotFoundError(name, version, self._stored_versions(name)) from exc
        finally:
            self._forget_resolutions()

    def delete_pipeline(self, name: str, *, delete_file: bool = False) -> int:
        """Delete every stored version and stage label (runs are kept); returns versions deleted.

        Raises PipelineNotFoundError when neither stored nor (with delete_file) a file."""
        n = self.store.delete_pipeline(name)
        self._forget_resolutions()
        path = self.pipeline_files().get(name)
        if delete_file and path is not None:
            path.unlink()
            n += 0 if n else 1
        if n == 0:
            raise PipelineNotFoundError(name)
        return n

    def _base_dir(self, p: Pipeline) -> str:
        """Folder that the pipeline's relative knowledge-base paths are resolved against. For a
        shared pipeline (resolved for runs) computed once: `Path.resolve` is a few system calls
        that every predict paid (~6% of the event loop's time, docs/serving.md)."""
        if p.shared:
            memo = self._shared_base_dirs
            hit = memo.get(id(p))
            if hit is not None and hit[0] is p:  # the entry holds p, so its id is not reused meanwhile
                return hit[1]
            if len(memo) > 256:
                memo.clear()
            memo[id(p)] = (p, self._base_dir_of(p))
            return memo[id(p)][1]
        return self._base_dir_of(p)

    def _base_dir_of(self, p: Pipeline) -> str:
        if p.source_file and Path(p.source_file).exists():
            return str(Path(p.source_file).resolve().parent)
        return str(self.pipeline_dir)

    async def _resolve(self, pipeline: Pipeline | str, version: str | None) -> Pipeline:
        """`get_pipeline` for runs, cached: a name's resolution is reused for `RESOLVE_TTL_S` seconds
        (stage changes made by this Workbench apply at once; a pipeline file is re-read when it changes).
        The cached Pipeline is shared by runs and never mutated.

        The resolution itself (the store's stage and version queries, the pipeline folder, the file's
        parse) runs on a worker thread, never on the event loop: on a replica sharing a SQLite file
        with another, the stage query can wait for the file. A stale entry is not served: the runs
        that find it stale wait (off the loop) for one shared refresh. A refresh that began before this
        Workbench changed a stage or stored a version is neither joined nor cached afterwards.

        Raises PipelineNotFoundError / PipelineValidationError as `get_pipeline`."""
        if not isinstance(pipeline, str):
            return pipeline
        key = (pipeline, version)
        hit = self._resolved.get(key)
        if hit is not None and time.monotonic() - hit[0] < RESOLVE_TTL_S and hit[2] == self._file_stamp(hit[1]):
            return hit[1]
        loop = asyncio.get_running_loop()
        pending = self._resolving.get(key)
        if pending is None or pending[0] != self._resolve_generation or pending[1].get_loop() is not loop:
            task = loop.create_task(self._refresh(key, self._resolve_generation))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # all waiters may have left
            self._resolving[key] = (self._resolve_generation, task)
            pending = self._resolving[key]
        return await asyncio.shield(pending[1])  # a waiter that is cancelled leaves the refresh to the others

    async def _refresh(self, key: tuple[str, str | None], generation: int) -> Pipeline:
        started = time.monotonic()  # the entry's age counts from before the store was read
        try:
            p, stamp = await asyncio.to_thread(self._resolve_now, *key)
            if generation == self._resolve_generation:  # no stage change or new version meanwhile
                self._resolved[key] = (started, p, stamp)
            return p
        finally:
            if self._resolving.get(key, (None, None))[1] is asyncio.current_task():
                del self._resolving[key]

    def _resolve_now(self, name: str, version: str | None) -> tuple[Pipeline, tuple | None]:
        """The resolution and its file's stamp; runs on a worker thread (`_resolve`)."""
        p = self.get_pipeline(name, version, shared=True).share()
        return p, self._file_stamp(p)

    def _forget_resolutions(self) -> None:
        """Drop the cached resolutions (a stage changed, a version was stored or deleted); a refresh
        in flight is then neither joined nor cached."""
        self._resolve_generation += 1
        self._resolved.clear()

    @staticmethod
    def _file_stamp(p: Pipeline) -> tuple | None:
        """(mtime, size) of the pipeline's file, None when it has none or it is not a file: one
        `stat` per predict (it runs on the event loop)."""
        if not p.source_file:
            return None
        try:
            st = os.stat(p.source_file)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else None
