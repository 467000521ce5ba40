"""Running the shell blocks of README.md and docs/*.md (helper of tests/test_docs.py).

A shell block is fenced ```bash (commands only) or ```console (`$ command` lines, each followed by
the output it prints). The blocks of one file run in order, each as `bash -e -o pipefail`, in one
throw-away project folder per file: copies of `knowledge_bases/`, `pipelines/`, `models/`, `data/`
and `docs/examples/`, a link to the repository's `.venv`, its own SQLite store
(`WORKBENCH_DATABASE_URL`), `.venv/bin` first on PATH, and `WORKBENCH_API_KEYS` = `$KEY`.

Markers a doc may use (tests/test_docs.py lists the blocks they apply to):
- a line `# not run by the docs tests: REASON` in a block: the block is not run (a GPU, a
  cluster, an install step, an interactive screen); the reason is visible to readers, and the
  test reports the block as skipped with it.
- `<!-- docs-test: output illustrative -->` on the line before a ```console block: its output
  is an example (timings, ids); only the exit statuses are checked. Otherwise the output must
  match: line by line after trailing spaces are dropped, where a line `...` stands for any
  number of lines and `...` inside a line for any text.
- a console command ending in `# exit N` is expected to exit with status N (else 0).

Server: `127.0.0.1:8000` and `localhost:8000` in a block become the address of a free port (also
set as `WORKBENCH_SERVER__PORT`). A block that starts `workbench serve ... &` starts it itself,
as readers would; a block that only talks to the address gets a `workbench serve` started by the
test first, waited for on `/readyz`. Every server of a file is stopped after its last block.
`curl` is wrapped so that an HTTP error status fails the block (`--fail-with-body`), as a
reader would notice the error body.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = re.compile(r"^\s*(?:\$\s*)?# not run by the docs tests: (.+)$", re.M)
ILLUSTRATIVE = "<!-- docs-test: output illustrative -->"
SERVER_ADDRESSES = ("127.0.0.1:8000", "localhost:8000")
PROJECT_COPIES = ("knowledge_bases", "pipelines", "models", "data", "docs/examples")
BLOCK_TIMEOUT_S = 300
API_KEY = "docs-key"
CURL_SHIM = r"""#!/bin/bash
# curl with --fail-with-body unless the command already asks for --fail (-f): an HTTP error fails the block
for a in "$@"; do
  case "$a" in --fail|--fail-with-body|-[a-zA-Z]*f*) exec /usr/bin/curl "$@";; esac
done
exec /usr/bin/curl --fail-with-body "$@"
"""


@dataclass
class ShellBlock:
    doc: Path
    line: int  # first line of the block's text (1-based)
    lang: str  # bash | console
    code: str
    illustrative: bool = False

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        m = NOT_RUN.search(self.code)
        return m.group(1).strip() if m else None

    def commands(self) -> list[tuple[str, list[str], int]]:
        """Console blocks: (command text, expected output lines, expected exit status) per `$` line."""
        out: list[tuple[str, list[str], int]] = []
        lines = self.code.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                raise AssertionError(f"{self.where}: output before the first `$ command` line: {line!r}")
            cmd = [line[2:]]
            while cmd[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd.append(lines[i].removeprefix("> "))
            expected: list[str] = []
            while i + 1 < len(lines) and not lines[i + 1].startswith("$ "):
                i += 1
                expected.append(lines[i].rstrip())
            text = "\n".join(cmd)
            m = re.search(r"#\s*exit (\d+)\s*$", text)
            out.append((text, expected, int(m.group(1)) if m else 0))
            i += 1
        return out


def shell_blocks(docs: list[Path]) -> list[ShellBlock]:
    fence = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)
    out = []
    for doc in docs:
        text = doc.read_text()
        for m in fence.finditer(text):
            if m.group(1) in ("bash", "console"):
                before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
                line = text[: m.start()].count("\n") + 2
                out.append(ShellBlock(doc, line, m.group(1), m.group(3), before.strip() == ILLUSTRATIVE))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def output_matches(expected: list[str], actual: str) -> bool:
    """`expected` lines against `actual` text: exact after trailing spaces and blank edge lines are
    dropped; a line `...` matches any number of lines, `...` inside a line any text."""
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    got = "\n".join(x.rstrip() for x in actual.strip("\n").splitlines()) + "\n"
    want_text = "".join(parts)
    if not expected or all(not x.strip() for x in expected):
        return not actual.strip()
    return re.fullmatch(want_text, got, re.S) is not None


@dataclass
class Project:
    """The throw-away project folder of one doc, its environment and the servers it started."""

    root: Path
    port: int = field(default_factory=free_port)
    groups: list[int] = field(default_factory=list)  # process groups to stop at the end
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path) -> Project:
        for rel in PROJECT_COPIES:
            shutil.copytree(ROOT / rel, root / rel, ignore=shutil.ignore_patterns("__pycache__"))
        (root / ".venv").symlink_to(ROOT / ".venv")
        shim = root / ".docs-test-bin"
        shim.mkdir()
        (shim / "curl").write_text(CURL_SHIM)
        (shim / "curl").chmod(0o755)
        project = cls(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
        env.update(
            PATH=f"{shim}:{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            WORKBENCH_DATABASE_URL=f"sqlite:///{root / 'workbench.sqlite3'}",
            WORKBENCH_SERVER__PORT=str(project.port),
            WORKBENCH_API_KEYS=API_KEY,
            KEY=API_KEY,
            XDG_STATE_HOME=str(root / ".state"),
            XDG_DATA_HOME=str(root / ".data"),
            COLUMNS="100",
            TERM="dumb",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
        )
        env.pop("VIRTUAL_ENV", None)
        project.env = env
        return project

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def localise(self, code: str) -> str:
        for a in SERVER_ADDRESSES:
            code = code.replace(a, self.address)
        return code

    def _get(self, path: str) -> int | None:
        try:
            with urllib.request.urlopen(f"http://{self.address}{path}", timeout=2) as r:
                return r.status
        except OSError:
            return None

    def server_up(self) -> bool:
        return self._get("/healthz") == 200

    def start_server(self) -> None:
        """`workbench serve` in the background, as the docs start it; returns once /readyz answers 200."""
        log = open(self.root / "serve.log", "ab")  # noqa: SIM115 - kept open by the server process
        proc = subprocess.Popen(
            ["workbench", "serve"], cwd=self.root, env=self.env, stdout=log, stderr=log, start_new_session=True
        )
        self.groups.append(proc.pid)
        deadline = time.monotonic() + 180
        while self._get("/readyz") != 200:
            if proc.poll() is not None:
                raise AssertionError(f"workbench serve exited with {proc.returncode}: {self.server_log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"workbench serve not ready after 180 s: {self.server_log()}")
            time.sleep(0.2)

    def server_log(self) -> str:
        path = self.root / "serve.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def run(self, script: str) -> subprocess.CompletedProcess:
        """`script` under `bash -e -o pipefail`; stdout and stderr together (a file, not a pipe: a
        `workbench serve &` of the block keeps its copy open after the block ends)."""
        out_path = self.root / f".block-{len(self.groups)}.out"
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "-e", "-o", "pipefail", "-c", script],
                cwd=self.root,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.groups.append(proc.pid)  # a `workbench serve &` of the block stays in this group
            try:
                proc.wait(timeout=BLOCK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                text = out_path.read_text(errors="replace")
                raise AssertionError(f"timed out after {BLOCK_TIMEOUT_S} s; output:\n{text[-3000:]}") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out_path.read_text(errors="replace"))

    def stop(self) -> None:
        """SIGTERM every process group this project started (servers shut down gracefully), then SIGKILL."""
        for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            alive = []
            for pgid in self.groups:
                try:
                    os.killpg(pgid, sig)
                    alive.append(pgid)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while alive and time.monotonic() < deadline:
                time.sleep(0.1)
                alive = [g for g in alive if _group_alive(g)]
            if not alive:
                return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def console_script(block: ShellBlock, project: Project) -> tuple[str, list[tuple[str, list[str], int]]]:
    """One bash script for a console block: each command's output between markers, then its status."""
    commands = block.commands()
    parts = ["set +e"]
    for n, (cmd, _, _) in enumerate(commands):
        parts.append(f"echo '@@docs-cmd {n}@@'")
        parts.append(project.localise(cmd))
        parts.append(f'__docs_rc=$?; echo; echo "@@docs-status {n} $__docs_rc@@"')
    return "\n".join(parts) + "\n", commands


def check_console(block: ShellBlock, project: Project, output: str, commands: list) -> list[str]:
    """Problems of a console block's run: wrong exit statuses, output unlike the doc's."""
    problems = []
    for n, (cmd, expected, status) in enumerate(commands):
        m = re.search(rf"@@docs-cmd {n}@@\n(.*?)\n@@docs-status {n} (\d+)@@", output, re.S)
        if m is None:
            problems.append(f"`{cmd}` did not finish; output:\n{output[-3000:]}")
            continue
        got, rc = m.group(1), int(m.group(2))
        if rc != status:
            problems.append(f"`{cmd}` exited with {rc}, the doc expects {status}; output:\n{got[-3000:]}")
        elif not block.illustrative and not output_matches(expected, got):
            problems.append(
                f"`{cmd}`: output differs from the doc\n--- doc:\n" + "\n".join(expected) + f"\n--- got:\n{got}"
            )
    return problems


def needs_server(code: str) -> bool:
    return any(a in code for a in SERVER_ADDRESSES)


def starts_server(code: str) -> bool:
    return re.search(r"workbench serve\b[^\n#]*&", code) is not None
