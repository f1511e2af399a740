"""A file that HDF5 writes in place but whose state on disk changes only at commits.

The results writer opens its file through h5py's ``fileobj`` driver on a ``CommittedFile``, so every
read and write of the HDF5 library goes through it:

- writes beyond the committed length (new chunks of rows, new metadata: nearly all the bytes) go to
  the disk at once. The committed file does not reach there, so they change nothing it holds;
- writes inside the committed length (the superblock, object headers, chunk indexes, the partly
  filled last chunk of each dataset: a few hundred KB per commit) are kept in memory, by page,
  and reads see them.

``commit`` (after HDF5 has flushed) then writes those pages and the new length to
``<file>.journal`` — under a temporary name, renamed when whole — writes them into the file, and
removes the journal. A kill before the rename leaves the last commit untouched (and some bytes
past its end, which HDF5 ignores); a kill after it leaves the journal, which the next writer, and
any reader that can, applies first (``recover``: roll forward; applying twice is harmless). So the
file on disk is the last commit at every moment but while a commit writes its pages in place (a
fraction of a millisecond), and a journal beside it says how to finish that commit. The writer
holds an exclusive ``lockf`` lock on one byte far past the end of the file: a second writer is
refused, readers (which lock with ``flock``, if at all) are not hindered, and a reader applies a
journal only when it can take that lock (no writer is alive).

No fsync: this protects against the death of the process (SIGKILL, the out-of-memory killer, a
full disk), not of the machine.
"""

import fcntl
import functools
import os
import struct
import zlib

PAGE = 4096
MAGIC = b"GCCJRNL1"
LOCK_AT = 1 << 62          # the byte the writer locks: far past any file's end
_HEAD = struct.Struct("<8sQQ")    # magic, new length, number of pages
_ENTRY = struct.Struct("<QI")     # offset, length
_TAIL = struct.Struct("<I8s")     # crc32 of all before, magic


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


def _lock(fd, path):
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, LOCK_AT)
    except OSError:
        raise Busy(f"{path} is being written by another process") from None


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


def recover(path):
    """Finish a commit that a kill interrupted: apply ``<path>.journal`` to ``path`` and remove
    it, when it can (no writer holds the file, and it may be written). Returns the journal
    ((length, pages)) when one remains that the caller must read through (a live writer is
    committing, or the file is read-only), else None."""
    jpath = journal_path(path)
    if not os.path.exists(jpath):
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return _read_journal(jpath)
    try:
        try:
            _lock(fd, path)
        except Busy:
            return _read_journal(jpath)
        journal = _read_journal(jpath)
        if journal is not None:
            _apply(fd, *journal)
        os.remove(jpath)
        return None
    finally:
        os.close(fd)  # releases the lock


class CommittedFile:
    """The file object h5py writes through (see the module notes). ``create``: a new, empty file
    at ``path`` (an existing one is replaced); else an existing file, recovered first. Holds the
    writer's lock until ``close``. ``reader`` (a journal's pages): read-only, through them."""

    def __init__(self, path, create=False, *, reader=None):
        self.path = os.fspath(path)
        self.readonly = reader is not None
        self.fd = os.open(self.path, os.O_RDONLY if self.readonly else
                          os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0), 0o644)
        self.pages = {}      # page index -> bytearray: the writes inside the committed length
        try:
            if not self.readonly:
                _lock(self.fd, self.path)
                if not create:
                    journal = _read_journal(journal_path(self.path))
                    if journal is not None:
                        _apply(self.fd, *journal)
                        os.remove(journal_path(self.path))
            self.committed = os.fstat(self.fd).st_size  # what a reader of the disk sees
        except BaseException:
            os.close(self.fd)
            raise
        self.length = self.committed                # what HDF5 sees
        self.cut = self.committed  # [cut, committed) was truncated away: zeros unless paged
        self.pos = 0
        self.broken = None         # the error that ended writing, if any
        if self.readonly:  # a journal's commit, read through
            length, pages = reader
            for offset, data in pages:
                self._put(offset, data)
            self.truncate(length)

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
        """Bytes held for the next commit."""
        return PAGE * len(self.pages)

    def commit(self):
        """Make the disk hold what HDF5 wrote (see the module notes). Raises OSError (a full
        disk) with the last commit kept; the file is then broken for writing."""
        if self.broken is not None:
            raise OSError(f"{self.path}: writing ended after an error ({self.broken})")
        # a page holds the bytes inside the committed length only: past it, the disk has them
        end = min(self.committed, self.length)
        pages = sorted((p * PAGE, bytes(v[:min(PAGE, end - p * PAGE)]))
                       for p, v in self.pages.items() if p * PAGE < end)
        if not pages and self.length == self.committed:
            return
        jpath = journal_path(self.path)
        try:
            self._write_journal(jpath, pages)
        except OSError as e:  # nothing in place changed: the last commit stands
            self.broken = e
            raise
        try:
            _apply(self.fd, self.length, pages)
        except OSError as e:  # the journal stays: the next opener finishes this commit
            self.broken = e
            raise
        os.remove(jpath)
        self.pages.clear()
        self.committed = self.cut = self.length

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
        """Release the file (and the lock). What was not committed is dropped; after an error,
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
