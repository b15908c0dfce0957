"""One installation per sandbox uid range on a host.

Sandboxed servers of tenant N run as host uid `WORKBENCH_SANDBOX_UID_BASE + N`. Two
installations (two databases) on one host with the same base would run their tenants N as
one uid: RLIMIT_NPROC counted together, each other's files writable, signals allowed. So a
gateway claims its base at start, in a file per base under WORKBENCH_SANDBOX_UID_CLAIMS_DIR
(a directory only the gateway's user may write) naming its installation and database, and
refuses to start when another installation's claim is there.

A claim is never released by a gateway: files its tenants' uids own outlive it. It is
retired, with a warning, when the installation it names is gone for good and no gateway
of it runs: its database is this gateway's own (the same file or server and name: the
database was deleted or dropped and made again, a new installation in its place), or its
SQLite file is missing. Whether a gateway of it runs is a lock, not a guess: every running
gateway holds a shared lock on its claim file (released by the kernel when the process
ends), and retiring takes the exclusive one (under the directory's lock, so that two
retirers never mistake each other for a running gateway). An operator retires any other
claim with `manage.py retire_uid_claim` (`retire_claim` here), which refuses while a
gateway holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("workbench.sandbox")

FIX_DIRECTORY = (
    "Make it a directory only this user can write (mode 0700), or set WORKBENCH_SANDBOX=none "
    "if stdio servers need no sandbox."
)
RETIRE = "manage.py retire_uid_claim"
# Claims retired, then made, in one start: more means other gateways keep changing them.
ATTEMPTS = 3


class StartRefused(RuntimeError):
    """The gateway must not start, for a reason its operator must act on: the text says
    what and how, in one line (no traceback is worth showing)."""


class UidRangeClaimed(StartRefused):
    """The gateway must not start: its uid range is another installation's, or unknown."""


@dataclass(frozen=True)
class ClaimFile:
    """What a claim file says: the installation, its database for an operator's eyes, and
    its SQLite file when it has one (so that its absence can be seen)."""

    installation: str
    database: str
    database_file: str = ""

    def as_json(self) -> dict[str, str]:
        fields = {"installation": self.installation, "database": self.database}
        return fields | ({"database_file": self.database_file} if self.database_file else {})

    def described(self) -> str:
        return f"{self.installation or 'unreadable claim'}, database {self.database}"


class HeldClaim:
    """This process's hold on its claim: a shared lock, so that nobody retires the claim
    while it runs. Closed when the gateway stops (or by the kernel, when it dies)."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def claim_uid_base(
    directory: Path, uid_base: int, installation: str, database: str, database_file: str = ""
) -> HeldClaim:
    """Claim `uid_base` for `installation` (described as `database`, its SQLite file
    `database_file` if any) and hold it while this process runs, or raise UidRangeClaimed.
    Safe against gateways claiming at once: a claim is written aside, then linked into
    place whole, and only one link can win; a retired claim is unlinked under its
    exclusive lock, and only if it is still the one in place."""
    _private_directory(directory)
    path = directory / f"{uid_base}.json"
    mine = ClaimFile(installation, database, database_file)
    for _ in range(ATTEMPTS):
        _create(path, mine)
        fd = _open(path)
        if fd is None:  # retired between the link and the open: claim again
            continue
        try:
            held = _hold_or_retire(fd, path, uid_base, mine)
        except BaseException:
            os.close(fd)
            raise
        if held is not None:
            return held
        os.close(fd)
    raise UidRangeClaimed(
        f"WORKBENCH_SANDBOX_UID_BASE={uid_base} could not be claimed in {directory}: its claim "
        f"changed {ATTEMPTS} times while this gateway started. Start it again."
    )


def _hold_or_retire(fd: int, path: Path, uid_base: int, mine: ClaimFile) -> HeldClaim | None:
    """The claim open as `fd`: ours (held), or another installation's, retired when it is
    gone for good (None: claim again), else refused."""
    theirs = _read(fd)
    if theirs.installation == mine.installation:
        fcntl.flock(fd, fcntl.LOCK_SH)
        return HeldClaim(fd) if _in_place(fd, path) else None
    gone = _gone(theirs, mine)
    if gone is None:
        raise UidRangeClaimed(
            f"WORKBENCH_SANDBOX_UID_BASE={uid_base} is claimed on this host by another "
            f"installation ({theirs.described()}; claim file {path}): its tenants would run "
            f"as the same uids as this installation's ({mine.installation}, database "
            f"{mine.database}). Give each installation a WORKBENCH_SANDBOX_UID_BASE of its "
            f"own, or retire the claim with `{RETIRE}` if the other installation is gone "
            "for good."
        )
    with _exclusive(path.parent):
        if not _in_place(fd, path):
            return None  # another gateway of ours retired it first: claim again
        if not _lock_alone(fd):
            raise UidRangeClaimed(
                f"WORKBENCH_SANDBOX_UID_BASE={uid_base} is claimed on this host by "
                f"installation {theirs.installation}, whose database {theirs.database} "
                f"{gone}, but a gateway of it still runs (it holds the claim file {path}). "
                "Stop that gateway, then start this one."
            )
        path.unlink()
        fcntl.flock(fd, fcntl.LOCK_UN)
    logger.warning(
        "Retired the uid claim of installation %s: its database %s %s. "
        "WORKBENCH_SANDBOX_UID_BASE=%d is this installation's (%s) now, and so are the "
        "files its tenants' uids own (their package caches).",
        theirs.installation,
        theirs.database,
        gone,
        uid_base,
        mine.installation,
    )
    return None


def _gone(theirs: ClaimFile, mine: ClaimFile) -> str | None:
    """Why the installation a claim names is gone for good (words for the log), or None."""
    if not theirs.installation:
        return None  # not a claim: the operator decides
    if theirs.database == mine.database:
        return f"is now this installation's ({mine.installation}): it was made anew"
    if theirs.database_file and not os.path.lexists(theirs.database_file):
        return "is gone (its file is missing)"
    return None


def retire_claim(directory: Path, uid_base: int) -> ClaimFile | None:
    """The operator's retirement of `uid_base`'s claim (`manage.py retire_uid_claim`): the
    claim retired, None when there was none; UidRangeClaimed while a gateway holds it."""
    path = directory / f"{uid_base}.json"
    fd = _open(path)
    if fd is None:
        return None
    try:
        theirs = _read(fd)
        with _exclusive(directory):
            if not _lock_alone(fd):
                raise UidRangeClaimed(
                    f"The claim of WORKBENCH_SANDBOX_UID_BASE={uid_base} "
                    f"({theirs.described()}; claim file {path}) is held by a running gateway "
                    "of that installation. Stop it first."
                )
            if _in_place(fd, path):
                path.unlink()
            fcntl.flock(fd, fcntl.LOCK_UN)
        return theirs
    finally:
        os.close(fd)


def read_claim(directory: Path, uid_base: int) -> ClaimFile | None:
    """What `uid_base`'s claim says; None when there is none."""
    fd = _open(directory / f"{uid_base}.json")
    if fd is None:
        return None
    try:
        return _read(fd)
    finally:
        os.close(fd)


def claim_held(directory: Path, uid_base: int) -> bool:
    """Whether a running gateway holds `uid_base`'s claim (`make reset` asks)."""
    fd = _open(directory / f"{uid_base}.json")
    if fd is None:
        return False
    try:
        with _exclusive(directory):
            alone = _lock_alone(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
        return not alone
    finally:
        os.close(fd)


def _open(path: Path) -> int | None:
    """The claim at `path`, open for reading and locking; None when there is none."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """The claims directory's lock, held by whoever tries a claim's exclusive lock: so
    that a failed try means a running gateway, never another retirer holding it a moment."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _lock_alone(fd: int) -> bool:
    """The exclusive lock, if no gateway holds its shared one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _in_place(fd: int, path: Path) -> bool:
    """Whether the file open as `fd` is still the claim at `path` (not retired since)."""
    with contextlib.suppress(FileNotFoundError):
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    return False


def _unusable(directory: Path, reason: str) -> UidRangeClaimed:
    return UidRangeClaimed(
        f"WORKBENCH_SANDBOX_UID_CLAIMS_DIR={directory} cannot be used: {reason}. {FIX_DIRECTORY}"
    )


def _private_directory(directory: Path) -> None:
    """The claims directory, made 0700 when missing; one that others could write to (or a
    link to one) would let them claim or free any range, and is refused."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        raise _unusable(directory, f"it cannot be made ({exc.strerror or exc})") from exc
    if stat.S_ISLNK(info.st_mode):
        raise _unusable(directory, "it is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise _unusable(directory, "it is not a directory")
    if info.st_uid != os.geteuid():
        raise _unusable(
            directory, f"it belongs to uid {info.st_uid}, not this gateway's ({os.geteuid()})"
        )
    if info.st_mode & 0o022:
        raise _unusable(
            directory, f"it may be written by others (mode {stat.S_IMODE(info.st_mode):04o})"
        )


def _create(path: Path, claim: ClaimFile) -> bool:
    """Whether this call made the claim (False: a claim was there)."""
    fd, aside = tempfile.mkstemp(dir=path.parent, prefix=".claim-")  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(claim.as_json(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(aside)


def _read(fd: int) -> ClaimFile:
    """What the claim open as `fd` says; an installation of "" when it is not a claim."""
    try:
        claim = json.loads(os.pread(fd, 1 << 16, 0))
    except (OSError, ValueError):
        return ClaimFile("", "unknown")
    if not isinstance(claim, dict) or not isinstance(claim.get("installation"), str):
        return ClaimFile("", "unknown")
    database_file = claim.get("database_file")
    return ClaimFile(
        claim["installation"],
        str(claim.get("database") or "unknown"),
        database_file if isinstance(database_file, str) else "",
    )
