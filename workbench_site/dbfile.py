"""The SQLite database file readable by its owner alone (it holds every tenant's secrets,
encrypted, their keys' hashes and the call log).

SQLite creates a database file with mode 0644 (less the umask), and its `-wal` and `-shm`
files with the database file's own mode. Settings call `make_private` before any
connection is opened, in every process (gateway, admin, `manage.py migrate`): a missing
file is created 0600 (an empty file is an empty database), so it is never readable by
others, not even for a moment; an existing one, and its WAL files, are made 0600.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SIDE_FILES = ("-wal", "-shm", "-journal")


def sqlite_path(name: object) -> Path | None:
    """The file behind a DATABASES NAME, or None (in memory, a URI)."""
    text = str(name or "")
    if not text or text == ":memory:" or text.startswith("file:") or "mode=memory" in text:
        return None
    return Path(text)


def make_private(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return  # a missing directory or a read-only place: SQLite will say so itself
    else:
        os.close(fd)
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SIDE_FILES)):
        try:
            if stat.S_IMODE(file.stat().st_mode) & 0o077:
                file.chmod(0o600)
        except (FileNotFoundError, PermissionError):
            continue
