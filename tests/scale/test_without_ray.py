"""Ray is optional: nothing imports it unless `--ray` / `workbench.scale` is used, and without it `--ray`
says how to install it (the import is blocked here as if the extra were missing)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.app import app


@pytest.fixture
def no_ray(monkeypatch):
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--ray", "local", "--replicas", "2"],
        ["run", "demo_digits", "--input-file", "{jsonl}", "--ray", "local"],
        ["bench", "api", "--ray", "local"],
    ],
    ids=["serve", "run", "bench"],
)
def test_ray_option_without_ray_says_how_to_install_it(no_ray, tmp_path, args):
    f = tmp_path / "in.jsonl"
    f.write_text('{"images": [[0]]}\n')
    res = CliRunner().invoke(app, [a.replace("{jsonl}", str(f)) for a in args])
    assert res.exit_code == 2, res.output
    assert "Ray is not installed" in res.output and "uv sync --extra ray" in res.output


def test_require_ray_names_the_extra(no_ray):
    from workbench.scale import RayNotInstalledError, require_ray

    with pytest.raises(RayNotInstalledError, match=r"optional extra `ray`.*pip install 'workbench\[ray\]'"):
        require_ray()


def test_nothing_imports_ray_unless_asked():
    code = (
        "import sys, cli.app, workbench, workbench.scale, api.app, cli.serve, cli.run, cli.bench; "
        "from workbench.scale import ScaleError; "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))[:5])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_replicas_without_ray_is_refused():
    res = CliRunner().invoke(app, ["serve", "--replicas", "2"])
    assert res.exit_code == 2 and "--replicas needs --ray" in res.output


def test_check_store_refuses_sqlite_on_many_nodes_and_in_memory():
    from workbench.scale import ScaleError, check_store

    check_store("sqlite:////tmp/x.sqlite3", 1)
    check_store("postgresql+psycopg://u@h/db", 5)
    with pytest.raises(ScaleError, match="SQLite file, but the Ray cluster has 3 nodes"):
        check_store("sqlite:////tmp/x.sqlite3", 3)
    with pytest.raises(ScaleError, match="in-memory SQLite"):
        check_store("sqlite://", 1)


def test_check_store_shows_the_url_as_written():
    """Review finding 06: `sqlite:///:memory:` was shown as `sqlite:///%3Amemory%3A`; a password stays hidden."""
    from workbench.scale import ScaleError, check_store

    with pytest.raises(ScaleError) as err:
        check_store("sqlite:///:memory:", 1)
    assert "WORKBENCH_DATABASE_URL=sqlite:///:memory: is an in-memory" in str(err.value) and "%3A" not in str(err.value)
    check_store("postgresql+psycopg://u:secret@h/db", 5)  # not SQLite: accepted
    with pytest.raises(ScaleError) as err:
        check_store("sqlite://u:secret@/:memory:", 1)
    assert "secret" not in str(err.value)


def test_serve_ray_model_must_be_a_causal_lm_and_workers_is_refused(tmp_path):
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "architectures": ["BertModel"]}')
    res = CliRunner().invoke(app, ["serve", "--ray", "local", "--model", str(folder)])
    assert res.exit_code == 2
    assert f"--model {folder.resolve()}: not a causal LM" in res.output and "generation deployment" in res.output
    res = CliRunner().invoke(app, ["serve", "--ray", "local", "--model", str(tmp_path / "none")])
    assert res.exit_code == 2 and "no config.json" in res.output
    res = CliRunner().invoke(app, ["serve", "--ray", "local", "--workers", "2"])
    assert res.exit_code == 2 and "--ray cannot be combined with --workers" in res.output


def test_bench_ray_store_names_the_replicas_store(monkeypatch):
    """`bench api --ray local --ray-store URL` deploys on that store (e.g. PostgreSQL, measured in
    docs/scaling.md) instead of a temporary SQLite file; without --ray the option is refused."""
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    import workbench.scale as scale

    seen = []

    def fake_connect(address, *, settings, log_dir=None, **kw):
        seen.append((address, settings.database_url))
        raise scale.ScaleError("stopped by the test")

    monkeypatch.setattr(scale, "connect", fake_connect)
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", "sqlite:////tmp/not-this-one.sqlite3")  # restored after
    url = "postgresql+psycopg://bench@127.0.0.1:5999/bench"
    res = CliRunner().invoke(app, ["bench", "api", "--ray", "local", "--ray-store", url])
    assert res.exit_code == 2 and "stopped by the test" in res.output, res.output
    assert seen == [("local", url)]
    res = CliRunner().invoke(app, ["bench", "api", "--ray", "local"])
    assert seen[1][1].startswith("sqlite:///") and seen[1][1].endswith("/bench.sqlite3")  # a temporary file
    res = CliRunner().invoke(app, ["bench", "api", "--ray-store", url])
    assert res.exit_code == 2 and "--ray-store needs --ray" in res.output
