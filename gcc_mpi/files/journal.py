"""A file that HDF5 writes in place but whose state on disk changes only at commits.

The results writer opens its file through h5py's ``fileobj`` driver on a ``CommittedFile``, so every
read and write of the HDF5 library goes through it:

- writes beyond the committed length (new chunks of rows, new metadata: nearly all the bytes) go to
  the disk at once. The committed file does not reach there, so they change nothing it holds;
- writes inside the committed length (the superblock, object headers, chunk indexes, the partly
  filled last chunk of each dataset: a few hundred KB per commit) are kept in memory, by page,
  and reads see them.

``commit`` (after HDF5 has flushed) writes those pages and the new length to ``<file>.journal``
— under a temporary name, renamed when whole —, then writes them into the file and removes the
journal. A kill before the rename leaves the last commit untouched (and some bytes past its end,
which HDF5 ignores); a kill after it leaves the journal, which the next writer or reader applies
first (roll forward; applying it twice is harmless). So the file on disk is the last commit at
every moment but while a commit writes its pages in place (a fraction of a millisecond), and
then a journal beside it says how to finish that commit.

Readers (``open_snapshot``) hold a shared lock while they read; a commit writes its pages into
the file only when it can take that lock exclusively. Otherwise it keeps them, and its journal
stands for the commit: a reader reads the file through the journal it found when it opened (the
file does not change in place while it reads, and what the writer adds goes past the journal's
length), so gcc_mpi's readers see one commit, whole, however long they read. Past DEFERRED_BYTES of
pages held that way the writer waits for the readers (DEFER_WAIT at most, then writes anyway).
The writer holds another lock for its whole life: a second writer is refused. Both are
open-file-description locks (Linux; process locks elsewhere) on bytes far past the end of the
file, which HDF5's own ``flock`` of readers does not see. Tools that do not lock (plain h5py)
open the last commit whenever they open the file; one kept open across a commit may read a mix.

No fsync: this protects against the death of the process (SIGKILL, the out-of-memory killer, a
full disk), not of the machine.
"""

import errno
import fcntl
import functools
import os
import struct
import time
import zlib

PAGE = 4096
MAGIC = b"GCCJRNL1"
WRITER_AT = 1 << 62        # the byte the writer locks for its life
READERS_AT = WRITER_AT + 1  # shared by readers; a commit writing pages in place takes it
DEFERRED_BYTES = 32 << 20  # pages a writer holds for readers before it waits for them
DEFER_WAIT = 60.0          # seconds it waits for them at most
READ_WAIT = 10.0           # seconds a reader waits for a commit to finish writing in place
_HEAD = struct.Struct("<8sQQ")    # magic, new length, number of pages
_ENTRY = struct.Struct("<QI")     # offset, length
_TAIL = struct.Struct("<I8s")     # crc32 of all before, magic
_FLOCK = "hhqqi4x"                # struct flock on Linux: type, whence, start, len, pid
_SETLK = getattr(fcntl, "F_OFD_SETLK", None)


def _guarded(result):
    """A method h5py's fileobj driver calls: it must not raise (the driver leaves the exception
    set while HDF5 goes on calling, which ends in a crash). The first error is kept in
    ``broken`` instead, the call returns ``result(self, *args)``, and the writer raises it once
    the HDF5 call is over."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args):
            try:
                return method(self, *args)
            except BaseException as e:  # noqa: BLE001 - MemoryError, a full disk, a Ctrl-C
                if self.broken is None:
                    self.broken = e
                return result(self, *args)
        return guarded
    return wrap


class Busy(OSError):
    """Another process is writing the file."""


def journal_path(path):
    return os.fspath(path) + ".journal"


def _lock(fd, at, kind):
    """Take (kind fcntl.F_RDLCK or F_WRLCK) or release (F_UNLCK) the lock on byte ``at``
    without waiting; False if another holder has it."""
    try:
        if _SETLK is not None:
            fcntl.fcntl(fd, _SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, at, 1, 0))
        else:
            how = {fcntl.F_RDLCK: fcntl.LOCK_SH, fcntl.F_WRLCK: fcntl.LOCK_EX,
                   fcntl.F_UNLCK: fcntl.LOCK_UN}[kind]
            fcntl.lockf(fd, how | (fcntl.LOCK_NB if kind != fcntl.F_UNLCK else 0), 1, at)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _lock_within(fd, at, kind, seconds):
    """``_lock``, trying again for ``seconds`` at most (a holder that only writes a commit's
    pages lets go within milliseconds)."""
    until, pause = time.monotonic() + seconds, 1e-4
    while not _lock(fd, at, kind):
        if time.monotonic() > until:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
    return True


def _read_journal(path):
    """(length, [(offset, bytes)]) of a whole journal, or None if there is none or it is not
    whole (a kill while it was written: it was never renamed, or its bytes are not all there)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    if len(data) < _HEAD.size + _TAIL.size:
        return None
    magic, length, count = _HEAD.unpack_from(data)
    crc, end = _TAIL.unpack_from(data, len(data) - _TAIL.size)
    if magic != MAGIC or end != MAGIC or zlib.crc32(data[:-_TAIL.size]) != crc:
        return None
    pages, at = [], _HEAD.size
    for _ in range(count):
        offset, n = _ENTRY.unpack_from(data, at)
        at += _ENTRY.size
        pages.append((offset, data[at:at + n]))
        at += n
    return length, pages


def _write_all(fd, data, offset):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def _apply(fd, length, pages):
    for offset, data in pages:
        _write_all(fd, data, offset)
    if os.fstat(fd).st_size != length:
        os.ftruncate(fd, length)


def _finish(path):
    """Apply a journal a writer left (it died mid-commit) when no writer and no reader holds
    the file, and it may be written; else leave it."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        if _lock(fd, WRITER_AT, fcntl.F_WRLCK) and _lock(fd, READERS_AT, fcntl.F_WRLCK):
            journal = _read_journal(journal_path(path))
            if journal is not None:
                _apply(fd, *journal)
            os.remove(journal_path(path))
    finally:
        os.close(fd)  # releases the locks


def open_snapshot(path):
    """(descriptor holding a reader's lock, journal or None) for reading ``path``: a journal a
    dead writer left is applied first when it can be; then the file does not change in place
    until the descriptor is closed, and the last commit is the file read through the journal
    returned (``CommittedFile(path, reader=journal)``), or the file itself if there is none."""
    if os.path.exists(journal_path(path)):
        _finish(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        _lock_within(fd, READERS_AT, fcntl.F_RDLCK, READ_WAIT)  # else read as it is
        return fd, _read_journal(journal_path(path))
    except BaseException:
        os.close(fd)
        raise


class CommittedFile:
    """The file object h5py writes through (see the module notes). ``create``: a new, empty file
    at ``path`` (an existing one is replaced); else an existing file, whose journal, if a writer
    left one, is the state it starts from. Holds the writer's lock until ``close``. ``reader``
    ((length, pages) of a journal): read-only, through it."""

    def __init__(self, path, create=False, *, reader=None):
        self.path = os.fspath(path)
        self.readonly = reader is not None
        self.fd = os.open(self.path, os.O_RDONLY if self.readonly else
                          os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0), 0o644)
        self.pages = {}      # page index -> bytearray: the writes inside the committed length
        try:
            if not self.readonly and not _lock(self.fd, WRITER_AT, fcntl.F_WRLCK):
                raise Busy(f"{self.path} is being written by another process")
            journal = reader or (None if create else _read_journal(journal_path(self.path)))
            self.committed = os.fstat(self.fd).st_size  # what the disk holds (and HDF5 sees)
        except BaseException:
            os.close(self.fd)
            raise
        self.length = self.committed
        self.cut = self.committed  # [cut, committed) was truncated away: zeros unless paged
        self.pos = 0
        self.broken = None         # the error that ended writing, if any
        if journal is not None:    # a commit not in the file yet: its pages are ours
            length, pages = journal
            for offset, data in pages:
                self._put(offset, data)
            self.truncate(length)

    def moved(self, path):
        """The writer renamed the file to ``path``: it is known by that name from now on."""
        self.path = os.fspath(path)

    def failed(self, error):
        """``error`` ended writing (the first such error is kept)."""
        if self.broken is None:
            self.broken = error

    # -- the file-object interface h5py's fileobj driver calls ---------------------------------
    def seek(self, pos, whence=os.SEEK_SET):
        self.pos = pos + (self.length if whence == os.SEEK_END else
                          self.pos if whence == os.SEEK_CUR else 0)
        return self.pos

    def tell(self):
        return self.pos

    def read(self, n=-1):
        n = max(0, self.length - self.pos) if n < 0 else n
        buf = bytearray(n)
        self.readinto(buf)
        return bytes(buf)

    @_guarded(lambda self, buf: len(buf))
    def readinto(self, buf):
        view = memoryview(buf).cast("B")
        n, pos = len(view), self.pos
        end = min(pos + n, self.length)
        got = os.preadv(self.fd, [view[:end - pos]], pos) if end > pos else 0
        view[got:] = bytes(n - got)  # past the end: zeros, as HDF5 expects
        lo, hi = max(pos, self.cut), min(pos + n, self.committed)
        if lo < hi:  # truncated away and not written since
            view[lo - pos:hi - pos] = bytes(hi - lo)
        if self.pages and pos < self.committed:
            for p in range(pos // PAGE, (min(pos + n, self.committed) - 1) // PAGE + 1):
                page = self.pages.get(p)
                if page is not None:
                    lo, hi = max(pos, p * PAGE), min(pos + n, (p + 1) * PAGE, self.committed)
                    view[lo - pos:hi - pos] = page[lo - p * PAGE:hi - p * PAGE]
        self.pos += n
        return n

    @_guarded(lambda self, data: len(memoryview(data).cast("B")))
    def write(self, data):
        view = memoryview(data).cast("B")
        n, pos = len(view), self.pos
        self.pos += n
        if self.readonly:
            raise OSError(f"{self.path} is open for reading only")
        if self.broken is not None:
            return n  # dropped: nothing is committed after an error
        inside = min(max(self.committed - pos, 0), n)
        if inside:
            self._put(pos, view[:inside])
        if inside < n:
            _write_all(self.fd, view[inside:], pos + inside)
        self.length = max(self.length, pos + n)
        return n

    @_guarded(lambda self, length: length)
    def truncate(self, length):
        if self.broken is not None:
            return length
        if length >= self.committed:
            if not self.readonly:
                os.ftruncate(self.fd, length)
        else:
            self.cut = min(self.cut, length)
            for p in [p for p in self.pages if p * PAGE >= length]:
                del self.pages[p]
        self.length = length
        return length

    def flush(self):
        pass

    def _put(self, pos, view):
        """Keep the bytes ``view`` at ``pos`` (inside the committed length) in the pages."""
        end = pos + len(view)
        for p in range(pos // PAGE, (end - 1) // PAGE + 1):
            page = self.pages.get(p)
            if page is None:
                page = self.pages[p] = bytearray(PAGE)
                if p * PAGE < self.cut:
                    os.preadv(self.fd, [memoryview(page)[:self.cut - p * PAGE]], p * PAGE)
            lo, hi = max(pos, p * PAGE), min(end, (p + 1) * PAGE)
            page[lo - p * PAGE:hi - p * PAGE] = view[lo - pos:hi - pos]

    # -- commits --------------------------------------------------------------------------------
    def pending_bytes(self):
        """Bytes of pages held: those of the next commit, and of commits held for readers."""
        return PAGE * len(self.pages)

    def commit(self, wait=0.0):
        """Make the disk hold what HDF5 wrote (see the module notes): in the file if no reader
        holds it (waiting ``wait`` seconds for them at most, or DEFER_WAIT once DEFERRED_BYTES
        of pages are held), else in the journal. Raises OSError (a full disk) with the last
        commit kept; the file is then broken for writing."""
        if self.broken is not None:
            raise OSError(f"{self.path}: writing ended after an error ({self.broken})")
        # a page holds the bytes inside the committed length only: past it, the disk has them
        end = min(self.committed, self.length)
        pages = sorted((p * PAGE, bytes(v[:min(PAGE, end - p * PAGE)]))
                       for p, v in self.pages.items() if p * PAGE < end)
        on_disk = not os.path.exists(journal_path(self.path))
        if not pages and self.length == self.committed and on_disk:
            return
        jpath = journal_path(self.path)
        try:
            self._write_journal(jpath, pages)
        except OSError as e:  # nothing in place changed: the last commit stands
            self.broken = e
            raise
        self._move_up(self.length)
        if self.pending_bytes() > DEFERRED_BYTES:
            wait = max(wait, DEFER_WAIT)
        if not _lock_within(self.fd, READERS_AT, fcntl.F_WRLCK, wait):
            return  # readers read through the journal; the pages stay for the next commit
        try:
            _apply(self.fd, self.length, pages)
            os.remove(jpath)
        except OSError as e:  # the journal stays: the next opener finishes this commit
            self.broken = e
            raise
        finally:
            _lock(self.fd, READERS_AT, fcntl.F_UNLCK)
        self.pages.clear()

    def _move_up(self, length):
        """Make ``length`` the committed length: writes below it are kept as pages from now
        on. The page across the old committed length takes the disk's bytes past it (written
        directly), which it did not hold."""
        old, self.committed = self.committed, length
        self.cut = length
        page = self.pages.get(old // PAGE)
        if page is not None and old % PAGE:
            hi = min((old // PAGE + 1) * PAGE, length)
            if hi > old:
                os.preadv(self.fd, [memoryview(page)[old % PAGE:hi - old // PAGE * PAGE]], old)

    def _write_journal(self, jpath, pages):
        parts = [_HEAD.pack(MAGIC, self.length, len(pages))]
        for offset, data in pages:
            parts += [_ENTRY.pack(offset, len(data)), data]
        body = b"".join(parts)
        tmp = jpath + ".tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, body + _TAIL.pack(zlib.crc32(body), MAGIC), 0)
            finally:
                os.close(fd)
            os.replace(tmp, jpath)
        except OSError:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise

    def close(self):
        """Release the file (and the locks). What was not committed is dropped; after an error,
        the bytes written past the last commit are cut off (unless a journal must finish it)."""
        if self.fd is None:
            return
        try:
            if (self.broken is not None and not self.readonly
                    and not os.path.exists(journal_path(self.path))):
                os.ftruncate(self.fd, self.committed)
        except OSError:
            pass
        finally:
            os.close(self.fd)
            self.fd = None
