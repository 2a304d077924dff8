"""The data folder lock: of drivers started at the same moment, exactly one gets it.

Real processes race for the lock at a barrier, on a local folder (flock) and
on a local S3 server (conditional puts); a holder killed with SIGKILL leaves
a lock the next driver takes at once.
"""

import multiprocessing as mp
import os
import signal
import time

import pytest

from pipeline.errors import UserError
from pipeline.lock import LOCK, DataLock
from pipeline.storage import DataStore


def _contend(data, barrier, results, everyone_tried):
    store = DataStore(data)
    lock = DataLock(store)
    barrier.wait()
    try:
        lock.acquire()
    except UserError as exc:
        results.put((os.getpid(), "refused", str(exc)))
        return
    results.put((os.getpid(), "held", ""))
    # hold it until every process has tried, however slow its try (a fixed time was not enough on a loaded
    # machine: a process whose first S3 call came after the holder's release took the free lock)
    everyone_tried.wait(120)
    lock.release()


def race(data, n=4):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    results = ctx.Queue()
    everyone_tried = ctx.Event()
    procs = [ctx.Process(target=_contend, args=(data, barrier, results, everyone_tried)) for _ in range(n)]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for _ in procs]
    everyone_tried.set()
    for p in procs:
        p.join(timeout=60)
    return out


def _check_race(data, rounds):
    store = DataStore(data)
    store.check_writable()
    for _ in range(rounds):
        out = race(data)
        held = [pid for pid, what, _ in out if what == "held"]
        assert len(held) == 1, out
        for pid, what, msg in out:
            if what == "refused":
                assert msg.startswith("another acesup run (") and "is writing to" in msg, msg
                assert f"pid {held[0]}" in msg or "starting up" in msg, msg
        with DataLock(store):  # released: free again
            pass


def test_of_drivers_started_at_the_same_moment_exactly_one_gets_a_local_folder(tmp_path):
    _check_race(str(tmp_path / "data"), rounds=2)


def test_of_drivers_started_at_the_same_moment_exactly_one_gets_an_s3_folder(s3_data):
    _check_race(s3_data, rounds=2)


def _hold_forever(data, ready):
    lock = DataLock(DataStore(data))
    lock.acquire()
    ready.set()
    time.sleep(600)


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_killed_holder_leaves_a_lock_the_next_driver_takes(where, tmp_path, request):
    data = str(tmp_path / "data") if where == "local" else request.getfixturevalue("s3_data")
    store = DataStore(data)
    store.check_writable()
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(data, ready))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(UserError, match=f"another acesup run .*pid {holder.pid}.* is writing"):
            DataLock(store).acquire()
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(timeout=30)
    with DataLock(store) as lock:  # at once: no waiting for a timeout
        assert lock.held and f'"pid": {os.getpid()}' in store.read_bytes(LOCK).decode()
