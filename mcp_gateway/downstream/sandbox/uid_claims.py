"""One installation per sandbox uid range on a host.

Sandboxed servers of tenant N run as host uid `WORKBENCH_SANDBOX_UID_BASE + N`. Two
installations (two databases) on one host with the same base would run their tenants N as
one uid: RLIMIT_NPROC counted together, each other's files writable, signals allowed. So a
gateway claims its base at start, in a file per base under WORKBENCH_SANDBOX_UID_CLAIMS_DIR
(a directory only the gateway's user may write) holding its installation id, and refuses
to start when another installation's claim is there. A claim is never released by a
gateway: files its tenants' uids own outlive it. An operator who retires an installation
deletes its claim file.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

FIX_DIRECTORY = (
    "Make it a directory only this user can write (mode 0700), or set WORKBENCH_SANDBOX=none "
    "if stdio servers need no sandbox."
)


class UidRangeClaimed(RuntimeError):
    """The gateway must not start: its uid range is another installation's, or unknown."""


def claim_uid_base(directory: Path, uid_base: int, installation: str, database: str) -> None:
    """Claim `uid_base` for `installation` (described as `database`), or raise
    UidRangeClaimed. Safe against gateways claiming at once: a claim is written aside,
    then linked into place whole, and only one link can win."""
    _private_directory(directory)
    path = directory / f"{uid_base}.json"
    if _create(path, {"installation": installation, "database": database}):
        return
    other, other_database = _read(path)
    if other == installation:
        return
    raise UidRangeClaimed(
        f"WORKBENCH_SANDBOX_UID_BASE={uid_base} is claimed on this host by another "
        f"installation ({other or 'unreadable claim'}, database {other_database}; claim file "
        f"{path}): its tenants would run as the same uids as this installation's "
        f"({installation}, database {database}). Give each installation a "
        "WORKBENCH_SANDBOX_UID_BASE of its own, or delete the claim file if the other "
        "installation is gone for good."
    )


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


def _create(path: Path, claim: dict[str, str]) -> bool:
    """Whether this call made the claim (False: a claim was there)."""
    fd, aside = tempfile.mkstemp(dir=path.parent, prefix=".claim-")  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(claim, handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(aside)


def _read(path: Path) -> tuple[str, str]:
    """(installation, database) of a claim; ("", "unknown") when it is not one."""
    try:
        claim = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return "", "unknown"
    if not isinstance(claim, dict) or not isinstance(claim.get("installation"), str):
        return "", "unknown"
    return claim["installation"], str(claim.get("database") or "unknown")
