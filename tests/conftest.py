"""Shared test set-up: every test gets its own SQLite store file and clean settings."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch):
    """Point WORKBENCH_DATABASE_URL at a fresh SQLite file and drop any other WORKBENCH_ variable."""
    for key in list(os.environ):
        if key.startswith("WORKBENCH_"):
            monkeypatch.delenv(key, raising=False)
    db = tmp_path / "workbench.sqlite3"
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{db}")
    from workbench.config import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def db_url(tmp_path) -> str:
    """URL of the per-test SQLite file (the same one WORKBENCH_DATABASE_URL names)."""
    return f"sqlite:///{tmp_path / 'workbench.sqlite3'}"


def pytest_configure(config):
    from thread_watch import ThreadWatch

    config.pluginmanager.register(ThreadWatch(), "thread_watch")
