"""Durable, locked, authenticated state for dpcore's stateful services (PINP, GPService).

A service's privacy guarantee is only as good as its memory: a session that forgets answers after
a crash, that is handed an older or edited copy of its state, or that runs twice on one state,
answers again from a budget it has already spent. This module is the one place where such state is
read and written. The threat model is in docs/privacy.md ("Durable state"); in short:

**One file, one inode, one lock.** The state path is resolved (``os.path.realpath``) once, the state
file is opened without following links, and an exclusive ``flock`` on *that open file* is held for
the whole session. The file's inode never changes while the state lives (both backends write in
place), so every spelling of it — a symbolic link, ``..``, another mount of the directory — meets
the same lock; a state with more than one hard link is refused (:class:`StateAliasError`) at load
and at every commit, and every commit first checks that the path still names the session's file.
There is no separate lock file to delete.

**Commit, then answer; roll back what did not commit.** A service makes its new answers part of its
in-memory state only after :meth:`StateStore.write` returned, and when ``write`` raises it asks
:meth:`StateStore.committed` whether the new sequence number reached the disk (a fault after the
durable point): if so, it keeps the new state; otherwise it restores the state of its last commit.
The rule, for every service: **an answer is charged (part of the durable state) if and only if it
was, or could have been, returned** — a commit whose write failed is never returned and never
charged; a commit that became durable is charged even if a fault kept its answers from the caller,
and a retry returns those same stored answers.

Backends (one interface):

* :class:`FileStateStore` — one file, rewritten **in place** under a redo journal: the new document
  is first written to ``<state>.journal`` (temporary file, ``fsync``, ``rename``, ``fsync`` of the
  directory — the commit point), then over the state file (``pwrite``, ``ftruncate``, ``fsync``), and
  the journal is removed. A reader (under the lock) that finds a journal with the next sequence
  number, or a torn state file, rolls the journal forward; a journal that fails authentication is an
  error. A kill at any point leaves the old or the new state, never a mix, never neither.
* :class:`SQLiteStateStore` — the document in one row of an SQLite database (WAL,
  ``synchronous=FULL``); the sequence check and the write are one ``BEGIN IMMEDIATE`` transaction.

**Authenticated and secret** (:mod:`dpcore._internal.sealing`): documents are sealed with
ChaCha20-Poly1305 under the state key (default: a 0600 key file beside the state), so a forged or
edited state fails authentication; files are created 0600 and a state readable by group or others is
refused. With the explicit opt-out ``state_key="unauthenticated"`` the document is plain JSON with an
unkeyed SHA-256 checksum (detects accidents only).

**Sequence numbers.** Every document carries ``seq``; a write must find the stored ``seq`` equal to
the one this session last read or wrote (:class:`StateRollbackError` otherwise, nothing written) and
stores ``seq + 1``. ``load(min_seq=...)`` refuses an older document; a shared
:class:`dpcore.BudgetAccountant` given as ``accountant=`` records every committed ``seq`` per state
id (:meth:`record_state`), so with a ledger the rollback of a state by someone who controls its disk
is refused at load. Without ``min_seq`` or a ledger, an older *valid* copy put back while no
session is live cannot be told from the file alone (documented).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import stat
import tempfile
from typing import Any, Callable, Optional

import numpy as np

import secrets

from dpcore._internal.sealing import SealingKey, keyed_digest, resolve_key, seal, unseal
from dpcore.exceptions import StateAliasError, StateAuthenticationError, StateInUseError, StateRollbackError

__all__ = [
    "StateRollbackError",
    "StateStore",
    "FileStateStore",
    "SQLiteStateStore",
    "open_state_store",
    "checksum",
    "atomic_write",
    "parse_document",
    "encode_document",
]

#: Fault-injection point for crash tests: called with a stage name at every step of a write
#: (files: ``"journal_written"``, ``"journal_synced"``, ``"journal_renamed"``, ``"main_written"``,
#: ``"main_synced"``, ``"journal_removed"``; SQLite: ``"sqlite_written"``, ``"sqlite_committed"``).
#: ``None`` in normal use; the kill-sweep worker sets it to SIGKILL itself at a chosen moment, and
#: the fault tests raise from it (OSError, KeyboardInterrupt) to check the rollback rule.
FAULT_HOOK: Optional[Callable[[str], None]] = None

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
#: Documents nest at most this deep (a deeper one is refused before the JSON parser recurses).
_MAX_DEPTH = 16
#: A state document is at most this large (a service at max_exact_queries = 10⁵ in 10⁴ dimensions is far below).
_MAX_DOC_BYTES = 1 << 34


def _fault(stage: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(stage)


def checksum(doc: dict) -> str:
    """SHA-256 of the canonical JSON of ``doc`` without its ``checksum`` field (not keyed)."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _fsync_dir(directory: str) -> None:
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _temp_prefix(path: str) -> str:
    return "." + os.path.basename(path) + ".dpcore-"


def atomic_write(path: str, data: bytes, *, stages: tuple = ("", "", "", "")) -> None:
    """Write ``data`` to ``path`` atomically and durably (temp file 0600, fsync, replace, fsync dir).

    ``stages``: the fault-hook names after the data is written, fsynced, renamed, and the directory fsynced.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=directory)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if stages[0]:
                _fault(stages[0])
            os.fsync(f.fileno())
        if stages[1]:
            _fault(stages[1])
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if stages[2]:
        _fault(stages[2])
    _fsync_dir(directory)
    if stages[3]:
        _fault(stages[3])


#: Every byte but the four JSON brackets (deleted before the depth scan: a state is mostly base64 text).
_NON_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _depth_ok(raw: bytes) -> bool:
    """Nesting depth of a JSON text ≤ ``_MAX_DEPTH`` (brackets inside strings counted too: conservative)."""
    depth = 0
    for b in raw.translate(None, _NON_BRACKETS):  # the scan visits the brackets only
        if b in (0x5B, 0x7B):
            depth += 1
            if depth > _MAX_DEPTH:
                return False
        elif b in (0x5D, 0x7D):
            depth -= 1
    return True


def encode_document(doc: dict, key: Optional[SealingKey], fmt: str) -> bytes:
    """The bytes stored for ``doc``: sealed under ``key``, or plain JSON with a checksum (no key)."""
    doc = {k: v for k, v in doc.items() if k != "checksum"}
    if key is None:
        doc["checksum"] = checksum(doc)
        return json.dumps(doc, sort_keys=True).encode()
    return seal(json.dumps(doc, sort_keys=True).encode(), key, fmt)


def parse_document(blob: bytes, key: Optional[SealingKey], fmt: str, where: str, *, sequenced: bool = True) -> dict:
    """Authenticate (or checksum) and parse one stored document; every failure names ``where``.

    ``sequenced``: the document must carry a valid sequence number ``seq`` (states; not releases)."""
    raw = unseal(blob, key, fmt, where)
    if not _depth_ok(raw):
        raise StateAuthenticationError(f"{where} nests deeper than {_MAX_DEPTH} levels: not a dpcore document")
    try:
        doc = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise StateAuthenticationError(
            f"{where} is corrupted or truncated (not a complete JSON document: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise StateAuthenticationError(f"{where} is not a {fmt} document (format {got!r})")
    if key is None and doc.get("checksum") != checksum(doc):
        raise StateAuthenticationError(f"{where} is corrupted or was edited (checksum mismatch)")
    doc.pop("checksum", None)
    if not sequenced:
        return doc
    seq = doc.get("seq")
    if type(seq) is not int or not 0 <= seq < 2**62:
        raise StateAuthenticationError(f"{where} has no valid sequence number (seq)")
    return doc


class StateStore:
    """Interface of a durable state store for one service session (see the module docstring).

    Life cycle: :meth:`create` (a new state) or :meth:`open` (an existing one) takes the lock;
    :meth:`read` / :meth:`write` need it; :meth:`release` drops it.
    """

    backend = ""

    def __init__(self, path, fmt: str, key: Optional[SealingKey] = None):
        self.path = os.path.realpath(os.fspath(path))
        self.fmt = fmt
        self.key = key
        self._fd: Optional[int] = None
        self._ident: Optional[tuple] = None

    # -- lock and identity ----------------------------------------------------------------------
    @property
    def locked(self) -> bool:
        return self._fd is not None

    def _take(self, fd: int, who: str) -> None:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"state_path {self.path!r} is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise StateInUseError(f"state_path {self.path!r} is in use by another live {who}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        try:
            self.check_identity()
        except BaseException:
            self.release()
            raise
        # Holding the lock, no writer of this state is live: temporary files of its interrupted
        # writes (a crash between mkstemp and rename) are garbage and are removed.
        directory = os.path.dirname(self.path)
        prefix = _temp_prefix(self.path + ".journal")
        for name in os.listdir(directory):
            if name.startswith(prefix) and name.endswith(".tmp"):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass

    def create(self, who: str = "session", resume: str = "load()") -> None:
        """Create the state file (0600) and lock it; :class:`FileExistsError` if a state is stored there.

        An existing file that holds no committed state (a session killed before its first commit:
        nothing was answered from it) is taken over.
        """
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            fresh = True
        except FileExistsError:
            fd, fresh = os.open(self.path, flags), False
        self._take(fd, who)
        try:
            if fresh:
                os.fchmod(fd, 0o600)
                _fsync_dir(os.path.dirname(self.path))
            elif self._has_state():
                raise FileExistsError(f"state_path {self.path!r} exists: resume that session with {resume} "
                                      "(a fresh session on it would reset a consumed budget)")
        except BaseException:
            self.release()
            raise

    def open(self, who: str = "session") -> None:
        """Open an existing state and lock it, before anything in it is read or rebuilt."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise FileNotFoundError(f"state_path {self.path!r} does not exist") from None
        self._take(fd, who)
        st = os.fstat(fd)
        if st.st_mode & 0o077:
            self.release()
            raise ValueError(f"state_path {self.path!r} is accessible by group or others (mode "
                             f"{stat.S_IMODE(st.st_mode):04o}); a state is as secret as the training data: "
                             "chmod 600 it")

    def check_identity(self) -> None:
        """The path still names the locked file, and the file has exactly one name."""
        st = os.fstat(self._fd)
        if st.st_nlink != 1:
            raise StateAliasError(
                f"state_path {self.path!r} has {st.st_nlink} names (hard links): two names would let two "
                "sessions answer from one state; remove the other links" if st.st_nlink > 1 else
                f"state_path {self.path!r} was removed while this session was live; nothing was written")
        try:
            cur = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            raise StateAliasError(f"state_path {self.path!r} was removed while this session was live; "
                                  "nothing was written") from None
        if (cur.st_dev, cur.st_ino) != self._ident:
            raise StateAliasError(f"state_path {self.path!r} was replaced by another file while this session "
                                  "was live; nothing was written")

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)  # closing the descriptor drops the flock
            except OSError:
                pass

    def _require_lock(self) -> None:
        if self._fd is None:
            raise RuntimeError("internal: the state is read or written without its lock")

    # -- documents -----------------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether a committed state is stored at the path (for tooling; no lock needed, no key needed)."""
        raise NotImplementedError

    def _has_state(self) -> bool:
        raise NotImplementedError

    def read(self) -> dict:
        """The stored document, authenticated and parsed (under the lock)."""
        raise NotImplementedError

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        """Store ``doc`` with ``seq = expect_seq + 1`` (0 for a new state) and return that ``seq``.

        ``expect_seq`` is the sequence number this session last read or wrote (``None``: no state
        committed yet). :class:`StateRollbackError` if the stored one differs (nothing written).
        """
        raise NotImplementedError

    def committed(self, seq: int) -> bool:
        """After a failed :meth:`write`: did the document with sequence number ``seq`` become durable?"""
        try:
            return self.read()["seq"] == seq
        except Exception:
            return False

    def _check_seq(self, stored: Optional[int], expect_seq: Optional[int]) -> int:
        if stored != expect_seq:
            if expect_seq is None:
                raise FileExistsError(f"state_path {self.path!r} exists: resume that session with load()")
            raise StateRollbackError(
                f"state_path {self.path!r} changed behind this session: stored sequence number {stored!r}, "
                f"expected {expect_seq} (the state was rolled back, replaced or written by another process); "
                "nothing was written")
        return 0 if expect_seq is None else expect_seq + 1

    def _encode(self, doc: dict, seq: int) -> bytes:
        doc = dict(doc)
        doc["seq"] = int(seq)
        return encode_document(doc, self.key, self.fmt)


class FileStateStore(StateStore):
    """One file, rewritten in place under a redo journal (module docstring)."""

    backend = "file"

    @property
    def _journal(self) -> str:
        return self.path + ".journal"

    def exists(self) -> bool:
        try:
            return os.path.getsize(self.path) > 0 or os.path.exists(self._journal)
        except OSError:
            return False

    def _has_state(self) -> bool:
        return os.fstat(self._fd).st_size > 0 or os.path.lexists(self._journal)

    def _main_bytes(self) -> bytes:
        size = os.fstat(self._fd).st_size
        if size > _MAX_DOC_BYTES:
            raise StateAuthenticationError(f"{self.path!r} is larger than any dpcore state ({size} bytes)")
        return os.pread(self._fd, size, 0) if size else b""

    def _overwrite(self, blob: bytes) -> None:
        view, off = memoryview(blob), 0
        while off < len(blob):
            off += os.pwrite(self._fd, view[off:], off)
        os.ftruncate(self._fd, len(blob))
        _fault("main_written")
        os.fsync(self._fd)
        _fault("main_synced")

    def read(self) -> dict:
        self._require_lock()
        where = repr(self.path)
        main_raw = self._main_bytes()
        journal = None
        if os.path.lexists(self._journal):
            try:
                fd = os.open(self._journal, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError as exc:
                raise StateAuthenticationError(f"journal {self._journal!r} cannot be opened ({exc.strerror})") from None
            try:
                size = os.fstat(fd).st_size
                if size > _MAX_DOC_BYTES:
                    raise StateAuthenticationError(f"journal {self._journal!r} is too large ({size} bytes)")
                jraw = os.read(fd, size) if size else b""
            finally:
                os.close(fd)
            journal = (jraw, parse_document(jraw, self.key, self.fmt, f"journal {self._journal!r}"))
        try:
            doc = parse_document(main_raw, self.key, self.fmt, where) if main_raw else None
        except StateAuthenticationError:
            if journal is None:
                raise
            doc = None  # torn by a kill during the in-place write: the journal holds the committed state
        if journal is not None:
            if doc is None or journal[1]["seq"] > doc["seq"]:
                self._overwrite(journal[0])  # roll the committed journal forward
                doc = journal[1]
            os.unlink(self._journal)
            _fsync_dir(os.path.dirname(self.path))
        if doc is None:
            raise FileNotFoundError(f"state_path {self.path!r} holds no committed state (a session stopped "
                                    "before its first commit; nothing was answered from it)")
        return doc

    def _stored_seq(self) -> Optional[int]:
        return self.read()["seq"] if self._has_state() else None

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        self._require_lock()
        self.check_identity()
        seq = self._check_seq(self._stored_seq(), expect_seq)
        blob = self._encode(doc, seq)
        atomic_write(self._journal, blob,
                     stages=("journal_written", "journal_synced", "journal_renamed", ""))  # the commit point
        self._overwrite(blob)
        os.unlink(self._journal)
        _fault("journal_removed")
        return seq


class SQLiteStateStore(StateStore):
    """The document in one row of an SQLite database (WAL, ``synchronous=FULL``), one transaction per write."""

    backend = "sqlite"

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("CREATE TABLE IF NOT EXISTS dpcore_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
                        "seq INTEGER NOT NULL, doc BLOB NOT NULL)")
        except sqlite3.DatabaseError as exc:
            con.close()
            raise StateAuthenticationError(f"{self.path!r} is not a readable SQLite state ({exc})") from None
        return con

    def exists(self) -> bool:
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0 and not os.path.exists(self.path + "-wal"):
            return False
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                return con.execute("SELECT 1 FROM dpcore_state WHERE id = 1").fetchone() is not None
            finally:
                con.close()
        except sqlite3.DatabaseError:
            return True  # something is there; load will say what is wrong with it

    def _has_state(self) -> bool:
        con = self._connect()
        try:
            return con.execute("SELECT 1 FROM dpcore_state WHERE id = 1").fetchone() is not None
        finally:
            con.close()

    def read(self) -> dict:
        self._require_lock()
        con = self._connect()
        try:
            row = con.execute("SELECT seq, doc FROM dpcore_state WHERE id = 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StateAuthenticationError(f"{self.path!r} is not a readable SQLite state ({exc})") from None
        finally:
            con.close()
        if row is None:
            raise FileNotFoundError(f"state_path {self.path!r} holds no committed state")
        blob = row[1] if isinstance(row[1], bytes) else str(row[1]).encode()
        doc = parse_document(blob, self.key, self.fmt, repr(self.path))
        if doc["seq"] != row[0]:
            raise StateAuthenticationError(f"{self.path!r} is inconsistent (row and document sequence numbers differ)")
        return doc

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        self._require_lock()
        self.check_identity()
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT seq FROM dpcore_state WHERE id = 1").fetchone()
                seq = self._check_seq(None if row is None else int(row[0]), expect_seq)
                con.execute("INSERT INTO dpcore_state (id, seq, doc) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE "
                            "SET seq = excluded.seq, doc = excluded.doc", (seq, self._encode(doc, seq)))
                _fault("sqlite_written")
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            _fault("sqlite_committed")
            return seq
        finally:
            con.close()


def open_state_store(path, fmt: str, backend: str = "auto", key: Optional[SealingKey] = None) -> StateStore:
    """The store for ``path``: ``backend="file"``, ``"sqlite"``, or ``"auto"`` (SQLite for the suffixes
    ``.sqlite``, ``.sqlite3``, ``.db``; a file otherwise)."""
    path = os.fspath(path)
    if backend == "auto":
        backend = "sqlite" if os.path.realpath(path).endswith(_SQLITE_SUFFIXES) else "file"
    if backend == "file":
        return FileStateStore(path, fmt, key)
    if backend == "sqlite":
        return SQLiteStateStore(path, fmt, key)
    raise ValueError(f"state_backend must be 'auto', 'file' or 'sqlite', got {backend!r}")


class NotPicklableService:
    """Mixin refusing ``pickle``/``copy`` of a live interactive mechanism (PINP, GPService).

    A copy of a live session would keep answering from the same calibrated state as the original,
    while each copy's answers are accounted as the only ones: the same budget spent twice. Durable
    persistence is ``state_path=`` + ``load`` (one state file, sequence-numbered, rollback refused).
    """

    def _refuse_copy(self):
        name = type(self).__name__
        raise TypeError(
            f"a live {name} cannot be pickled or copied: the copy would answer from the same calibrated "
            f"state as the original, spending its budget twice. Persist it with state_path= and "
            f"{name}.load(...) instead")

    def __reduce_ex__(self, protocol):
        self._refuse_copy()

    def __copy__(self):
        self._refuse_copy()

    def __deepcopy__(self, memo):
        self._refuse_copy()


def record_in_ledger(accountant: Any, state_id: str, seq: int) -> None:
    """Record a committed ``seq`` of ``state_id`` in the accountant's ledger (when it keeps one)."""
    rec = getattr(accountant, "record_state", None)
    if accountant is not None and rec is not None:
        rec(state_id, int(seq))


def check_against_ledger(accountant: Any, state_id: str, seq: int, where: str) -> None:
    """Refuse a stored ``seq`` below the last one the accountant's ledger recorded for ``state_id``."""
    get = getattr(accountant, "state_seq", None)
    if accountant is None or get is None:
        return
    last = get(state_id)
    if last is not None and seq < int(last):
        raise StateRollbackError(f"{where} holds sequence number {seq}, but the accountant's ledger recorded "
                                 f"{int(last)} for this state: an older copy was put back; refusing to resume")


def _check_min_seq(min_seq) -> Optional[int]:
    if min_seq is None:
        return None
    if isinstance(min_seq, bool) or not isinstance(min_seq, (int, np.integer)) or not 0 <= int(min_seq) < 2**62:
        raise ValueError(f"min_seq must be None or an int in [0, 2**62), got {min_seq!r}")
    return int(min_seq)


class DurableSession(NotPicklableService):
    """The durable-state life cycle shared by PINP and GPService (module docstring).

    Subclasses define ``_STATE_FORMAT``, ``_WHO``, ``_state_doc()`` (the service's own fields) and
    ``_fingerprint_material()`` (the model bytes the keyed fingerprint covers), and
    call :meth:`_init_state` in their constructor, :meth:`_guarded` around every step that extends the
    in-memory state and commits, and :meth:`_open_for_load` in ``load``.
    """

    _STATE_FORMAT = ""
    _WHO = "session"

    def _init_state(self, state_path, state_backend: str, state_key, accountant) -> None:
        self._store: Optional[StateStore] = None
        self._seq: Optional[int] = None
        self._ledger = accountant
        if state_path is None:
            return
        path = os.path.realpath(os.fspath(state_path))
        store = open_state_store(path, self._STATE_FORMAT, state_backend)  # validates the backend first
        store.key = resolve_key(state_key, path, create=True)
        store.create(self._WHO, f"{type(self).__name__}.load()")
        self._store = store
        self._state_id = secrets.token_hex(16)
        self._fp_salt = secrets.token_hex(16)
        self._fingerprint = self._keyed_fingerprint()  # once per session; every commit stores it

    def _keyed_fingerprint(self) -> str:
        """HMAC of the model (the subclass's ``_fingerprint_material()`` bytes) under this state's key."""
        return keyed_digest(self._store.key, bytes.fromhex(self._fp_salt), self._fingerprint_material())

    def _commit(self) -> None:
        doc = self._state_doc()
        doc.update(format=self._STATE_FORMAT, state_id=self._state_id, fp_salt=self._fp_salt,
                   fingerprint=self._fingerprint)
        self._seq = self._store.write(doc, self._seq)
        record_in_ledger(self._ledger, self._state_id, self._seq)

    def _guarded(self, work: Callable[[], Any], snapshot: Any, restore: Callable[[Any], None]) -> Any:
        """Run ``work`` (extend the in-memory state, commit); on any failure keep the new state only if
        its commit became durable, otherwise restore ``snapshot`` (the rule in the module docstring)."""
        before = self._seq
        try:
            return work()
        except BaseException:
            if self._seq == before:  # the write did not return
                nxt = 0 if before is None else before + 1
                if self._store is not None and self._store.committed(nxt):
                    self._seq = nxt  # durable: charged, and a retry returns the stored answers
                else:
                    restore(snapshot)
            raise

    @classmethod
    def _open_for_load(cls, state_path, state_backend: str, state_key, min_seq, accountant) -> tuple:
        """Open and lock an existing state (before anything is rebuilt), authenticate it and check its
        sequence number against ``min_seq`` and the accountant's ledger. Returns ``(store, doc)``."""
        min_seq = _check_min_seq(min_seq)
        path = os.path.realpath(os.fspath(state_path))
        store = open_state_store(path, cls._STATE_FORMAT, state_backend)
        store.open(cls._WHO)  # the lock first: a second live session is refused before anything else
        try:
            store.key = resolve_key(state_key, path, create=False)
            doc = store.read()
            if min_seq is not None and doc["seq"] < min_seq:
                raise StateRollbackError(
                    f"{path!r} holds sequence number {doc['seq']} < min_seq={min_seq}: an older copy of the "
                    "state (rolled back); refusing to resume from it")
            for field in ("state_id", "fp_salt", "fingerprint"):
                if not isinstance(doc.get(field), str) or not doc[field] or len(doc[field]) > 128:
                    raise StateAuthenticationError(f"{path!r}: stored field {field!r} is missing or invalid")
            try:
                bytes.fromhex(doc["fp_salt"])
            except ValueError:
                raise StateAuthenticationError(f"{path!r}: stored field 'fp_salt' is not hex") from None
            check_against_ledger(accountant, doc["state_id"], doc["seq"], repr(path))
        except BaseException:
            store.release()
            raise
        return store, doc

    def _adopt_loaded(self, store: StateStore, doc: dict, accountant) -> None:
        """Bind a rebuilt service to its (locked) store; the fingerprint must match the model."""
        self._store, self._ledger = store, accountant
        self._state_id, self._fp_salt = doc["state_id"], doc["fp_salt"]
        self._fingerprint = self._keyed_fingerprint()  # once per session; every commit stores it
        if self._fingerprint != doc["fingerprint"]:
            raise ValueError("model does not match the state (keyed fingerprint of mu_, X_fit_, kernel parameters, "
                             "lam, lipschitz_, n_samples_fit_ and the certificate differs)")
        self._seq = int(doc["seq"])
        if accountant is not None:
            last = getattr(accountant, "state_seq", lambda _id: None)(self._state_id)
            if last is None or last < self._seq:
                record_in_ledger(accountant, self._state_id, self._seq)


def check_params_doc(params: Any, keys: tuple, where: str) -> dict:
    """The stored public parameters of a service: exactly ``keys``, JSON scalars only (each one is then
    re-validated by the service's own checks and must recompute the stored calibration)."""
    if not isinstance(params, dict) or set(params) != set(keys):
        raise StateAuthenticationError(f"{where}: stored parameters must be exactly {sorted(keys)}")
    for k, v in params.items():
        if v is not None and type(v) not in (int, float, bool):
            raise StateAuthenticationError(f"{where}: stored parameter {k!r} is not a number")
    return dict(params)
