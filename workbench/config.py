"""Configuration (pydantic-settings): environment prefix `WORKBENCH_`, nesting with `__`.

Sources, highest priority first: keyword arguments, environment variables
(`WORKBENCH_DATABASE_URL`, `WORKBENCH_SERVER__PORT`, ...), the settings file named by
`WORKBENCH_SETTINGS_FILE` (TOML or JSON), then the defaults below.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

APP_NAME = "workbench"


# WORKBENCH_* variables read outside `Settings` (by rooms that must not import workbench, or by
# tools): accepted by the unknown-setting check.
OTHER_VARIABLES = frozenset(
    {"SETTINGS_FILE", "DEMO_LM", "TUI_API_KEY", "BENCH_THREADS", "ONNX_CACHE", "REQUIRE_NATIVE"}
    | {"SERVE_MODELS", "BENCH_GENERATE_ONLY"}  # `serve --model` to its workers; `bench generate` rows
    | {"SERVE_STARTUP_REPORT"}  # `serve` (exit on a start-up error) to its workers
    | {"FUZZ_EXAMPLES", "FUZZ_REPORT"}  # tests/api/test_schema_fuzz.py
)


_SQLALCHEMY_URL = re.compile(
    r"""
    (?P<name>[\w\+]+)://
    (?:(?P<username>[^:/]*)(?::(?P<password>[^@]*))?@)?
    (?:(?:\[(?P<ipv6host>[^/\?]+)\]|(?P<ipv4host>[^/:\?]+))?(?::(?P<port>[^/\?]*))?)?
    (?:/(?P<database>[^\?]*))?
    (?:\?(?P<query>.*))?
    """,
    re.X,
)


class ConfigError(Exception):
    """A setting is invalid; the message names the setting, the value and what is accepted."""


def default_database_url() -> str:
    """SQLite file `workbench.sqlite3` in the user data directory (platformdirs)."""
    data_dir = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return f"sqlite:///{data_dir / 'workbench.sqlite3'}"


class ServerSettings(BaseModel):
    """HTTP server settings (`workbench serve`)."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    workers: int = Field(1, ge=1)
    loop: Literal["asyncio", "uvloop"] = Field(
        "asyncio",
        description="event loop of each worker. asyncio accepts every pending connection at each loop "
        "iteration; uvloop accepted one per iteration, so under overload (loop iterations of ~0.1 s while the "
        "run pool holds the GIL) connections waited tens of seconds in the kernel's accept queue, unseen by "
        "admission control (docs/serving.md, Overload)",
    )
    exit_on_error: bool = Field(
        True,
        description="stop the server (exit status 1, one line naming the reason) when start-up loading fails, as "
        "Triton's --exit-on-error does; false keeps the process up with /readyz 'failed' (docs/serving.md)",
    )


class EndpointLimits(BaseModel):
    """Request limits of one endpoint; a field left unset takes the value from `LimitsSettings`."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int | None = Field(None, ge=1, description="Most bytes of the body as sent (compressed).")
    max_decompressed_bytes: int | None = Field(
        None, ge=1, description="Most bytes of a gzip/deflate body once inflated."
    )
    max_json_depth: int | None = Field(None, ge=1, le=10_000, description="Deepest nesting of arrays and objects.")


MIB = 1024 * 1024
# Binary tensors are large by nature: the KServe v2 infer routes get more room than JSON endpoints.
DEFAULT_ENDPOINT_LIMITS: dict[str, EndpointLimits] = {
    op: EndpointLimits(max_body_bytes=64 * MIB, max_decompressed_bytes=128 * MIB)
    for op in ("v2_model_infer", "v2_model_version_infer")
}


class LimitsSettings(BaseModel):
    """Request limits enforced by the API while it reads a body (`api/limits.py`; docs/api.md).

    `endpoints` overrides them per operation id (`predict`, `v2_model_infer`, `put_knowledge_base`...),
    e.g. `WORKBENCH_LIMITS__ENDPOINTS='{"predict": {"max_body_bytes": 1048576}}'`.
    """

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(4 * MIB, ge=1)
    max_decompressed_bytes: int = Field(16 * MIB, ge=1)
    max_json_depth: int = Field(64, ge=1, le=10_000)
    max_inflight_body_bytes: int = Field(
        256 * MIB, ge=1, description="Bytes of request bodies all requests may hold at once (503 past it)."
    )
    endpoints: dict[str, EndpointLimits] = Field(default_factory=lambda: dict(DEFAULT_ENDPOINT_LIMITS))

    @field_validator("endpoints", mode="after")
    @classmethod
    def _keep_defaults(cls, value: dict[str, EndpointLimits]) -> dict[str, EndpointLimits]:
        # an override of one endpoint keeps the built-in values of the others
        return {**DEFAULT_ENDPOINT_LIMITS, **value}

    def for_endpoint(self, operation_id: str | None) -> ResolvedLimits:
        """The limits of one operation (its overrides over the defaults above)."""
        own = self.endpoints.get(operation_id or "") or EndpointLimits()
        return ResolvedLimits(
            max_body_bytes=own.max_body_bytes or self.max_body_bytes,
            max_decompressed_bytes=own.max_decompressed_bytes or self.max_decompressed_bytes,
            max_json_depth=own.max_json_depth or self.max_json_depth,
        )


class ResolvedLimits(BaseModel):
    """The limits in force for one request."""

    max_body_bytes: int
    max_decompressed_bytes: int
    max_json_depth: int


class ServingSettings(BaseModel):
    """Admission control, deadlines and workers of the serving path (docs/serving.md).

    Environment: `WORKBENCH_SERVING__PIPELINE_MAX_QUEUE=128` and so on."""

    run_workers: int | None = Field(None, ge=1, description="threads running pipeline steps; None: 4 per core, >= 8")
    pipeline_max_queue: int = Field(
        256, ge=1, description="runs admitted per pipeline at once (running or waiting); more get 429"
    )
    pipeline_max_wait_s: float | None = Field(
        1.0,
        gt=0,
        description="refuse (429) a predict request whose expected wait (admitted / measured throughput) "
        "passes this; None: only pipeline_max_queue bounds the queue",
    )
    predict_timeout_s: float = Field(
        30.0, gt=0, description="default deadline of a predict or /v2 infer request (504 past it)"
    )
    max_timeout_s: float = Field(600.0, gt=0, description="largest per-request timeout_s accepted")
    generation_queue_timeout_s: float = Field(
        60.0, gt=0, description="a generation request still waiting for its first step after this is aborted"
    )
    record_before_answer: bool = Field(
        True,
        description="a predict answer is sent only once its run is committed to the store (group commit); "
        "False: write-behind (the answer does not wait for the commit)",
    )


class RulesSettings(BaseModel):
    """Limits of rule evaluation in the server, pipelines and `workbench kb run` (docs/rules.md).

    Environment: `WORKBENCH_RULES__MEMORY_LIMIT_MIB=256`."""

    model_config = ConfigDict(extra="forbid")

    memory_limit_mib: int = Field(
        512,
        ge=0,
        description="MiB of memory CLIPS may hold in one evaluation (MemoryLimitError, API 422, past it); 0: none",
    )

    @property
    def memory_limit_bytes(self) -> int | None:
        """The limit in bytes, None for no limit (`chaining.forward.EngineConfig.memory_limit`)."""
        return self.memory_limit_mib << 20 if self.memory_limit_mib else None


class RaySettings(BaseModel):
    """Scale-out on a Ray cluster (`workbench serve --ray`, `workbench run --ray`; docs/scaling.md).

    Environment: `WORKBENCH_RAY__MAX_REPLICAS=8` and so on. With `autoscale` the pipeline deployment
    starts at `min_replicas` and Ray Serve adds replicas up to `max_replicas` while each one has more
    than `target_ongoing_requests` requests in flight; without it, `--replicas N` (default
    `replicas`) replicas run all the time."""

    model_config = ConfigDict(extra="forbid")

    replicas: int = Field(1, ge=1, description="pipeline replicas when not autoscaling (`--replicas`)")
    autoscale: bool = Field(False, description="let Ray Serve scale the pipeline deployment")
    min_replicas: int = Field(1, ge=0, description="autoscaling: fewest pipeline replicas")
    max_replicas: int = Field(4, ge=1, description="autoscaling: most pipeline replicas")
    target_ongoing_requests: float = Field(16.0, gt=0, description="autoscaling: requests in flight per replica")
    max_ongoing_requests: int = Field(64, ge=1, description="requests one pipeline replica takes at once")
    replica_cpus: float = Field(1.0, gt=0, description="CPUs Ray reserves per pipeline replica")
    model_replicas: int = Field(1, ge=1, description="replicas of each one-shot model deployment")
    retries: int = Field(2, ge=0, description="a request whose replica died is retried this often, then 503")
    generation_replicas: int | None = Field(
        None, ge=1, description="replicas of the generation deployment (None: one per GPU of the cluster, 1 without)"
    )
    generation_stream_interval_s: float = Field(
        0.02,
        ge=0,
        description="the OpenAI and /v2 generate routes on Ray: a generation replica sends a request's outputs "
        "at most this often, merging the steps in between (the first at once); 0: every engine step. Rails and "
        "generate nodes always get every step",
    )
    generation_max_ongoing_requests: int = Field(
        256, ge=1, description="generation requests one generation replica takes at once (its engine batches them)"
    )
    serve_env: dict[str, str] = Field(
        default_factory=dict,
        description="environment of the Ray Serve controller that `deploy` starts, inherited by its HTTP proxies "
        "and replicas (default: none, Ray's defaults; e.g. RAY_SERVE_PROXY_USE_GRPC=1; measured in "
        "docs/scaling.md)",
    )
    pipelines_env: dict[str, str] = Field(
        default_factory=dict,
        description="environment of each pipeline replica (default: none, Ray's defaults; e.g. "
        "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD=0; measured in docs/scaling.md)",
    )
    ingress: Literal["serve_proxy", "haproxy"] = Field(
        "haproxy",
        description="what takes HTTP requests to the pipeline replicas: Serve's Python HTTP proxy (with the "
        "middleware of workbench.scale.proxy) or HAProxy with each replica answering HTTP itself (Ray's "
        "RAY_SERVE_ENABLE_HA_PROXY, with the rules of workbench.scale.haproxy; the default: half the CPU per request, "
        "measured in docs/scaling.md)",
    )
    http_port: int = Field(8000, ge=1, le=65535, description="Ray Serve's HTTP proxy port")
    http_host: str = Field("127.0.0.1", description="Ray Serve's HTTP proxy interface")
    object_store_memory: int | None = Field(
        None, ge=78643200, description="bytes of object store for `--ray local` (None: Ray's default)"
    )


class Settings(BaseSettings):
    """All Workbench settings. Read with `get_settings()`; see module docstring for sources."""

    model_config = SettingsConfigDict(
        env_prefix="WORKBENCH_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    database_url: str = Field(default_factory=default_database_url)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    server: ServerSettings = Field(default_factory=ServerSettings)
    serving: ServingSettings = Field(default_factory=ServingSettings)
    ray: RaySettings = Field(default_factory=RaySettings)
    knowledge_base_dir: Path | None = None
    pipeline_dir: Path | None = None
    allow_unsafe_rules: bool = False
    kb_shell_time_limit_s: float | None = Field(
        None, gt=0, description="seconds one command of `workbench kb shell` may run before CLIPS is halted"
    )
    # compiled forward engines kept per process (least recently used evicted and closed); every rule
    # file edit is a new knowledge-base version with its own engine
    max_forward_engines: int = Field(32, ge=1)
    # WORKBENCH_API_KEYS=key1,key2 : bearer keys for mutating endpoints; empty disables auth.
    api_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    require_key_for_predict: bool = False
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    rules: RulesSettings = Field(default_factory=RulesSettings)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        # SQLAlchemy's own URL grammar (sqlalchemy.engine.url._parse_url), checked without
        # importing SQLAlchemy (~0.4 s), which commands that never open the store do not need.
        m = _SQLALCHEMY_URL.match(value)
        port = m.group("port") if m else None
        if m is None or (port and not port.isdigit()):
            reason = f"Could not parse SQLAlchemy URL from string '{value}'" if m is None else f"bad port {port!r}"
            raise ValueError(
                f"not a SQLAlchemy URL ({reason}); e.g. sqlite:///path/to/file.sqlite3 or "
                "postgresql+psycopg://user@host/db"
            )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _FileSource(settings_cls))


class _FileSource(PydanticBaseSettingsSource):
    """Settings from the TOML or JSON file named by WORKBENCH_SETTINGS_FILE."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover - unused
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("WORKBENCH_SETTINGS_FILE")
        if not path:
            return {}
        file = Path(path)
        try:
            text = file.read_text()
        except OSError as exc:
            raise ConfigError(f"WORKBENCH_SETTINGS_FILE={path}: cannot read settings file ({exc.strerror})") from exc
        try:
            data = tomllib.loads(text) if file.suffix != ".json" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not valid {'JSON' if file.suffix == '.json' else 'TOML'}: {exc}") from exc
        return data


def load_settings(**overrides: Any) -> Settings:
    """Build settings from all sources.

    Raises:
        ConfigError: naming each bad setting as its environment variable, e.g.
            `WORKBENCH_DEVICE='tpu': Input should be 'auto', 'cpu' or 'cuda'`.
    """
    lines: list[str] = []
    known = {name.upper() for name in Settings.model_fields} | OTHER_VARIABLES
    for key in sorted(os.environ):
        if key.startswith("WORKBENCH_") and key[len("WORKBENCH_") :].split("__")[0] not in known:
            lines.append(f"{key}: unknown setting; known: " + ", ".join(f"WORKBENCH_{k}" for k in sorted(known)))
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            env = "WORKBENCH_" + "__".join(loc).upper()
            value = err.get("input")
            shown = f"={value!r}" if not isinstance(value, dict) else ""
            lines.append(f"{env}{shown}: {err['msg']}")
    if lines:
        raise ConfigError("invalid settings:\n  " + "\n  ".join(lines))
    return settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; `get_settings.cache_clear()` re-reads the environment)."""
    return load_settings()
