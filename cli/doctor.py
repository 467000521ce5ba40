"""`workbench doctor`: report versions, the working torch device, ONNX Runtime providers and the store."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
import io
import platform
import sys
from dataclasses import dataclass

import typer
from rich.console import Console
from rich.table import Table

REQUIRED = [
    "torch",
    "onnxruntime",
    "clips",
    "experta",
    "textual",
    "sqlalchemy",
    "networkx",
    "fastapi",
    "lark",
    "tokenizers",
    "safetensors",
]
DISTRIBUTIONS = {
    "torch": "torch",
    "onnxruntime": "onnxruntime-gpu",
    "clips": "clipspy",
    "experta": "experta",
    "textual": "textual",
    "sqlalchemy": "sqlalchemy",
    "networkx": "networkx",
    "fastapi": "fastapi",
    "lark": "lark",
    "tokenizers": "tokenizers",
    "safetensors": "safetensors",
}


@dataclass(slots=True)
class Check:
    name: str
    ok: bool
    detail: str


def check_imports(modules: list[str]) -> list[Check]:
    """Import each module; a failure is a broken requirement."""
    checks = []
    for module in modules:
        dist = DISTRIBUTIONS.get(module, module)
        try:
            importlib.import_module(module)
            try:
                version = md.version(dist)
            except md.PackageNotFoundError:
                version = "?"
            checks.append(Check(f"package {dist}", True, version))
        except Exception as exc:  # any import failure (ImportError, AttributeError in old deps...) is "broken"
            checks.append(Check(f"package {dist}", False, f"import {module} failed: {type(exc).__name__}: {exc}"))
    return checks


def check_torch_device(wanted: str) -> Check:
    """Run a small matmul on the device that `wanted` (auto|cpu|cuda) resolves to."""
    try:
        import torch

        if wanted == "cuda" and not torch.cuda.is_available():
            return Check("torch device", False, "WORKBENCH_DEVICE=cuda but torch.cuda.is_available() is False")
        device = "cuda" if wanted in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
        x = torch.ones(64, 64, device=device)
        ok = float((x @ x).sum()) == 64.0 * 64 * 64
        name = torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or platform.machine()
        return Check("torch device", ok, f"{device} ({name}), {torch.get_num_threads()} threads")
    except Exception as exc:
        return Check("torch device", False, f"{type(exc).__name__}: {exc}")


def check_onnxruntime() -> Check:
    """List the execution providers that actually create a session on a one-node model."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "probe",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 9
        blob = onnx._serialize(model) if hasattr(onnx, "_serialize") else model.SerializeToString()
        working = []
        ort.set_default_logger_severity(4)  # probing GPU providers on a CPU machine logs expected errors
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        for provider in ort.get_available_providers():
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    sess = ort.InferenceSession(blob, sess_options=opts, providers=[provider])
                if sess.get_providers()[0] == provider:
                    working.append(provider)
            except Exception:
                continue
        ort.set_default_logger_severity(2)
        return Check("onnxruntime providers", "CPUExecutionProvider" in working, ", ".join(working) or "none")
    except Exception as exc:
        return Check("onnxruntime providers", False, f"{type(exc).__name__}: {exc}")


def check_rule_engine_c_parts() -> Check:
    """The forward engine's optional C parts (built by the bootstrap); the detail says which are in
    use and why not. Not built (no C compiler) is ok: the engine falls back to Python code. Built
    but unusable (built from other sources, or not fitting the Python classes it fills) fails: the
    build is out of date and the fallback hides it; `bash scripts/bootstrap.sh` rebuilds."""
    try:
        from chaining.forward import native_facts, native_trace
        from rules import native_read, native_scan

        parts = [
            (name, part.AVAILABLE, part.UNAVAILABLE)
            for name, part in (
                ("trace recorder", native_trace),
                ("fact I/O", native_facts),
                ("data deffacts reader", native_scan),
                ("rule text reader", native_read),
            )
        ]
        ok = all(built or str(why).startswith("not built") for _, built, why in parts)
        detail = "; ".join(f"{name}: {'built' if built else why}" for name, built, why in parts)
        return Check("rule engine C parts", ok, detail)
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        return Check("rule engine C parts", True, f"unknown ({type(exc).__name__}: {exc}); Python code is used")


def check_store(url: str) -> Check:
    """Open (create and migrate) the store and report its schema revision."""
    try:
        from workbench.store import Store

        store = Store.open(url)
        try:
            return Check("database", True, f"{store.url} (schema revision {store.revision()})")
        finally:
            store.close()
    except Exception as exc:
        return Check("database", False, str(exc))


def run_checks(modules: list[str] | None = None) -> tuple[list[Check], dict[str, str]]:
    """All doctor checks; returns (checks, info). Settings errors become one failed check."""
    from workbench.config import ConfigError, load_settings

    info = {"python": f"{platform.python_version()} ({sys.executable})", "platform": platform.platform()}
    checks = check_imports(modules or REQUIRED)
    try:
        settings = load_settings()
    except ConfigError as exc:
        return [*checks, Check("settings", False, str(exc))], info
    checks.append(Check("settings", True, f"device={settings.device}"))
    checks.append(check_torch_device(settings.device))
    checks.append(check_onnxruntime())
    checks.append(check_rule_engine_c_parts())
    checks.append(check_store(settings.database_url))
    return checks, info


def register(app: typer.Typer) -> None:
    @app.command()
    def doctor() -> None:
        """Check the installation: packages, torch device, ONNX Runtime providers, database. Exit 1 if broken."""
        console = Console()
        checks, info = run_checks()
        table = Table(title="workbench doctor")
        table.add_column("check")
        table.add_column("status")
        table.add_column("detail", overflow="fold")
        for key, value in info.items():
            table.add_row(key, "", value)
        for c in checks:
            table.add_row(c.name, "[green]ok[/]" if c.ok else "[red]BROKEN[/]", c.detail)
        console.print(table)
        broken = [c.name for c in checks if not c.ok]
        if broken:
            console.print(f"[red]broken: {', '.join(broken)}[/]")
            raise typer.Exit(1)
