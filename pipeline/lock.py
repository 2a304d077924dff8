"""One driver per data folder: ``DATA/runs/.lock``, taken in one atomic step.

Two drivers started at the same moment on one folder must not both run, so
the lock is never "check, then write":

- a local or network folder: the driver holds an exclusive ``flock`` on the
  lock file for as long as it runs. The kernel gives it to exactly one
  process, and takes it back when that process dies, however it dies (a
  SIGKILL included), so a crash leaves no lock to clean up. The file is
  kept (emptied on release) and re-checked by inode after locking, so a lock
  is never taken on a file that someone replaced meanwhile;
- ``s3://``: the lock object is created with a conditional put
  (``If-None-Match: *``, boto3); S3 lets exactly one of two such puts succeed.
  A lock whose holder is dead is taken over with ``If-Match`` on its ETag, so
  of two drivers taking over the same dead lock, one wins. The holder renews
  its lock every ``RENEW_SECONDS`` (``renew``); a lock not renewed for
  ``STALE_LOCK_SECONDS`` is taken to be dead (its host is gone);
- any other URI (a store without conditional writes): check, then write, as
  the best that store allows.

The lock records the holder (host, pid, since), which the refusal names. On a
local folder a lock whose text names a live process of this host is also
respected when its flock is free (an acesup older than this module, which
only wrote the file); one naming a dead process is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import time

from .errors import UserError
from .storage import RUNS, DataStore

LOCK = f"{RUNS}/.lock"
STALE_LOCK_SECONDS = 6 * 3600  # an object-store lock of another host not renewed for this long is taken over
RENEW_SECONDS = 600.0


class DataLock:
    """Exclusive use of a data folder by one driver process (see the module docstring)."""

    def __init__(self, store: DataStore):
        self.store = store
        self.held = False
        self.me = {"host": socket.gethostname(), "pid": os.getpid()}
        self._fd: int | None = None
        self._etag: str | None = None
        self._renewed = 0.0

    def __enter__(self) -> "DataLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    # -- messages ------------------------------------------------------------------------------

    def _is_me(self, other: dict) -> bool:
        return other.get("host") == self.me["host"] and other.get("pid") == self.me["pid"]

    def _refuse(self, other: dict) -> UserError:
        st = self.store
        if self._is_me(other):
            return UserError(f"this process already runs a job on {st.location!r}; wait for it to finish")
        who = (f"host {other.get('host')}, pid {other.get('pid')}" if other.get("pid") is not None
               else "starting up")
        return UserError(f"another acesup run ({who}) is writing to {st.location!r}; wait for it to finish, "
                         f"or if it is dead remove {st.uri(LOCK)}")

    def _record(self) -> bytes:
        return json.dumps({**self.me, "since": time.time()}).encode()

    # -- acquire and release ----------------------------------------------------------------------

    def acquire(self) -> None:
        if self.store.local:
            self._acquire_local()
        elif self.store.location.startswith("s3://"):
            self._acquire_s3()
        else:
            self._acquire_checked()
        self.held = True
        self._renewed = time.monotonic()

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if self._fd is not None:
            self._release_local()
        elif self._etag is not None:
            self._release_s3()
        else:
            try:
                if self._is_me(_parse(self.store.read_bytes(LOCK))):
                    self.store.delete(LOCK)
            except OSError:
                pass

    def renew(self) -> None:
        """Keep an object-store lock fresh (every RENEW_SECONDS; cheap to call often)."""
        if not self.held or self._etag is None or time.monotonic() - self._renewed < RENEW_SECONDS:
            return
        client, bucket, key = _s3(self.store)
        resp = client.put_object(Bucket=bucket, Key=key, Body=self._record(), IfMatch=self._etag)
        self._etag = resp["ETag"]
        self._renewed = time.monotonic()

    # -- a local or network folder: flock ----------------------------------------------------------

    def _acquire_local(self) -> None:
        import fcntl

        self.store.makedirs(RUNS)
        path = self.store.path(LOCK)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                other = _parse(_read_fd(fd))
                os.close(fd)
                raise self._refuse(other) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the file was replaced between open and flock: lock the new one
        try:
            other = _parse(_read_fd(fd))
            if other and not self._is_me(other) and _holder_alive(other, self.me["host"]):
                raise self._refuse(other)
            os.ftruncate(fd, 0)
            os.pwrite(fd, self._record(), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing drops the flock
            raise
        self._fd = fd

    def _release_local(self) -> None:
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # an empty lock file is a free lock; it is never deleted (see above)
        except OSError:
            pass
        finally:
            os.close(fd)

    # -- s3: conditional puts ------------------------------------------------------------------------

    def _acquire_s3(self) -> None:
        client, bucket, key = _s3(self.store)
        from botocore.exceptions import ClientError

        try:
            self._etag = client.put_object(Bucket=bucket, Key=key, Body=self._record(), IfNoneMatch="*")["ETag"]
            return
        except ClientError as exc:
            if not _precondition_failed(exc):
                raise
        try:
            obj = client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:  # released between the two calls: try once more
            if _status(exc) != 404:
                raise
            return self._acquire_s3()
        other, etag = _parse(obj["Body"].read()), obj["ETag"]
        if self._is_me(other) or _holder_alive(other, self.me["host"]):
            raise self._refuse(other)
        try:  # take over the dead holder's lock: only one taker's If-Match can succeed
            self._etag = client.put_object(Bucket=bucket, Key=key, Body=self._record(), IfMatch=etag)["ETag"]
        except ClientError as exc:
            if not _precondition_failed(exc):
                raise
            raise self._refuse({}) from None

    def _release_s3(self) -> None:
        client, bucket, key = _s3(self.store)
        etag, self._etag = self._etag, None
        try:
            obj = client.get_object(Bucket=bucket, Key=key)
            if obj["ETag"] == etag:
                client.delete_object(Bucket=bucket, Key=key)
        except Exception:  # noqa: BLE001 - a lock left behind is taken over when its holder is dead
            pass

    # -- other stores: check, then write -------------------------------------------------------------

    def _acquire_checked(self) -> None:
        st = self.store
        if st.exists(LOCK):
            try:
                other = _parse(st.read_bytes(LOCK))
            except OSError:
                other = {}
            if self._is_me(other) or _holder_alive(other, self.me["host"]):
                raise self._refuse(other)
        st.write_atomic(LOCK, self._record())


def _parse(data: bytes) -> dict:
    """The holder a lock's text names ({} for an empty or unreadable lock); ``since`` left out."""
    try:
        d = json.loads(data) if data.strip() else {}
    except ValueError:
        return {}
    if not isinstance(d, dict):
        return {}
    out = {k: d[k] for k in ("host", "pid") if k in d}
    if "since" in d:
        out["since"] = d["since"]
    return out if "pid" in out else {}


def _read_fd(fd: int) -> bytes:
    return os.pread(fd, 1 << 16, 0)


def _holder_alive(other: dict, host: str) -> bool:
    if not other:
        return False
    if other.get("host") != host:
        return time.time() - float(other.get("since", 0)) < STALE_LOCK_SECONDS
    try:
        os.kill(int(other.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True


def _s3(store: DataStore):
    """(boto3 S3 client, bucket, key of the lock) for an ``s3://`` data location.

    The client reads the same environment as pyarrow's S3 filesystem (AWS_* variables,
    AWS_ENDPOINT_URL for an S3-compatible server).
    """
    try:
        import boto3
    except ModuleNotFoundError:
        raise UserError("an s3:// data location needs boto3 for its lock (a conditional put); install it with "
                        "pip install 'acesup[s3]'") from None
    bucket, _, prefix = store.root.partition("/")
    region = getattr(store.fs, "region", None) or None
    return boto3.client("s3", region_name=region), bucket, f"{prefix}/{LOCK}" if prefix else LOCK


def _status(exc) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _precondition_failed(exc) -> bool:
    """412 (an object exists / the ETag moved) or 409 (a conditional write raced another)."""
    code = exc.response.get("Error", {}).get("Code", "")
    return _status(exc) in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict")


__all__ = ["DataLock", "LOCK", "RENEW_SECONDS", "STALE_LOCK_SECONDS"]
