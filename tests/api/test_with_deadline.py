"""`with_deadline` (workbench/serving/admission.py): the predict's deadline, run in the caller's task.

The work is awaited in the calling task (no task of its own, so no extra loop passes between the
run's result and its answer); past the deadline it is cancelled and DeadlineError raised; a
cancellation of the caller from elsewhere (a client that left) stays a cancellation; a deadline
of zero never starts the work.
"""

from __future__ import annotations

import asyncio

import pytest

from workbench.serving.admission import with_deadline
from workbench.serving.errors import DeadlineError


def test_the_work_runs_in_the_callers_task_and_its_result_is_returned():
    async def main():
        caller = asyncio.current_task()

        async def work():
            await asyncio.sleep(0)
            return asyncio.current_task()

        ran_in = await with_deadline(work(), 5.0, "pipeline 'p'")
        return caller, ran_in

    caller, ran_in = asyncio.run(main())
    assert ran_in is caller


def test_past_the_deadline_the_work_is_cancelled_and_deadline_error_raised():
    seen = []

    async def main():
        async def work():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        with pytest.raises(DeadlineError, match=r"pipeline 'p': no answer within timeout_s=0.05 s"):
            await with_deadline(work(), 0.05, "pipeline 'p'")
        assert asyncio.current_task().cancelling() == 0  # the deadline's own cancel is taken back

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_a_cancel_from_elsewhere_stays_a_cancellation():
    async def main():
        started = asyncio.Event()

        async def work():
            started.set()
            await asyncio.sleep(10)

        task = asyncio.create_task(with_deadline(work(), 5.0, "pipeline 'p'"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_an_error_of_the_work_passes_through():
    async def main():
        async def work():
            raise KeyError("x")

        with pytest.raises(KeyError):
            await with_deadline(work(), 5.0, "pipeline 'p'")

    asyncio.run(main())


def test_a_deadline_of_zero_never_starts_the_work():
    started = []

    async def main():
        async def work():
            started.append(True)

        with pytest.raises(DeadlineError):
            await with_deadline(work(), 0.0, "pipeline 'p'")

    asyncio.run(main())
    assert started == []
