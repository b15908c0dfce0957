"""`make run`'s places of a checkout outside it, and its own sandbox uids: so that two
checkouts on one host share nothing, and one started again from scratch starts.

The demo's git repository cannot lie inside the checkout (no sandboxed server may see the
project directory), so `make run` keeps it in a directory of the checkout's own under
`/var/tmp/workbench-<uid>/` (named after the checkout, and a digest of its path). Beside
those, one claims directory for every checkout of this user: each checkout's uid base is
derived from its path (far from the production default, 200000, and from one another), and
two checkouts whose bases collide are told so by the claim, not left to share uids.

Free of Django: `python -m workbench_site.management.checkout .env` (make run) adds this
checkout's sandbox lines to its `.env` when they are missing, before any settings load.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

# Where `make run` keeps what lies outside checkouts (tests point it elsewhere).
RUN_ROOT_ENV = "WORKBENCH_RUN_ROOT"
# Checkouts' uid bases: one of SLOTS ranges of SPAN uids (a checkout's tenant ids stay
# below SPAN), from FIRST up; the last uid stays below 2**31.
FIRST_BASE = 1 << 30
SPAN = 1 << 20
SLOTS = 1023
CHECKOUT = Path(__file__).resolve().parents[2]


class NotOwnDirectory(RuntimeError):
    """A place `make run` would write to is not a directory of this user's own."""


def own_directory(path: Path) -> Path:
    """`path` made when missing, mode 0755 (the demo's sandboxed servers enter it); refused
    when it is a link or another user's (a name in /var/tmp is anyone's to take first)."""
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = path.lstat()
    if path.is_symlink() or not path.is_dir() or info.st_uid != os.geteuid():
        raise NotOwnDirectory(
            f"{path} is not a directory of this user's own (a link, or another user's): "
            f"remove it, or set {RUN_ROOT_ENV} to a directory of yours."
        )
    path.chmod(0o755)
    return path


def run_root() -> Path:
    return Path(os.environ.get(RUN_ROOT_ENV) or f"/var/tmp/workbench-{os.getuid()}")


def _digest(checkout: Path) -> str:
    return hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()


def checkout_dir(checkout: Path = CHECKOUT) -> Path:
    """This checkout's own directory outside it (the demo's files)."""
    return run_root() / f"{checkout.resolve().name}-{_digest(checkout)[:8]}"


def claims_dir() -> Path:
    """The uid claims of every checkout of this user."""
    return run_root() / "uid-claims"


def uid_base(checkout: Path = CHECKOUT) -> int:
    return FIRST_BASE + int(_digest(checkout), 16) % SLOTS * SPAN


def sandbox_settings(checkout: Path = CHECKOUT) -> dict[str, str]:
    return {
        "WORKBENCH_SANDBOX_UID_BASE": str(uid_base(checkout)),
        "WORKBENCH_SANDBOX_UID_CLAIMS_DIR": str(claims_dir()),
    }


def add_missing(env_file: Path, checkout: Path = CHECKOUT) -> list[str]:
    """Append to `env_file` the sandbox settings it lacks: the lines added."""
    present = {
        line.split("=", 1)[0].strip()
        for line in env_file.read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    }
    added = [f"{name}={value}" for name, value in sandbox_settings(checkout).items()]
    added = [line for line in added if line.split("=", 1)[0] not in present]
    if added:
        with env_file.open("a") as handle:
            handle.write(
                "# This checkout's own sandbox uids, claimed beside this user's other checkouts'"
                " (make run)\n" + "".join(f"{line}\n" for line in added)
            )
    return added


if __name__ == "__main__":
    for line in add_missing(Path(sys.argv[1])):
        print(f"{sys.argv[1]}: added {line}")
