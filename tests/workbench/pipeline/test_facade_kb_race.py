"""Two callers (threads of one server) uploading the same knowledge base at the same moment: both get the
knowledge base, the file is whole, and its version is stored once (before: an IntegrityError from the
store, or a FileNotFoundError when both wrote the same temporary file)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

TEXT = '(defrule hello => (printout t "hi" crlf))\n'


def test_the_same_knowledge_base_uploaded_by_two_threads_at_once(wb):
    rounds, callers = 30, 2
    barrier = threading.Barrier(callers, timeout=20)

    def upload(name: str):
        barrier.wait()  # both start the upload together
        return wb.upload_knowledge_base(name, TEXT)

    with ThreadPoolExecutor(callers) as pool:
        for i in range(rounds):
            name = f"race_{i}"
            kbs = list(pool.map(upload, [name] * callers))
            assert {kb.version for kb in kbs} == {kbs[0].version}
            assert (wb.knowledge_base_dir / f"{name}.clp").read_text() == TEXT
            stored = wb.store.get_knowledge_base(name, kbs[0].version)
            assert stored is not None and stored.sources == [[f"{name}.clp", TEXT]]
    assert not list(wb.knowledge_base_dir.glob("*.tmp"))
