"""One installation per sandbox uid range on a host (issue 20): the claim file of a uid base
names the installation (database) whose tenants run as those uids; another is refused, unless
the one named is gone for good (its database made anew, or its SQLite file missing) and no
gateway of it runs (issue 31: a reset starts again)."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_gateway.downstream.sandbox.uid_claims import (
    HeldClaim,
    UidRangeClaimed,
    claim_held,
    claim_uid_base,
    read_claim,
    retire_claim,
)

A, B = "a" * 32, "b" * 32


def claim(directory: Path, installation: str = A, base: int = 200_000) -> Path:
    """A claim made by a gateway that has stopped since."""
    held(directory, installation, base).close()
    return directory / f"{base}.json"


def held(
    directory: Path, installation: str = A, base: int = 200_000, database: str = ""
) -> HeldClaim:
    """A claim held by a running gateway (of a SQLite database at `database`)."""
    database = database or f"/srv/{installation[:1]}.sqlite3"
    return claim_uid_base(directory, base, installation, f"sqlite3 {database}", database)


def test_a_first_claim_makes_a_private_directory_and_names_the_installation(tmp_path):
    directory = tmp_path / "var" / "uid-claims"
    path = claim(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "installation": "a" * 32,
        "database": "sqlite3 /srv/a.sqlite3",
        "database_file": "/srv/a.sqlite3",
    }


def test_the_same_installation_claims_again_and_other_bases_are_free(tmp_path):
    claim(tmp_path)
    claim(tmp_path)  # another worker, a restart: the same installation
    claim(tmp_path, "b" * 32, base=300_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["200000.json", "300000.json"]


def test_another_installation_is_refused_naming_both_and_the_setting(tmp_path):
    (tmp_path / "a.sqlite3").touch()  # its database is there
    held(tmp_path, database=str(tmp_path / "a.sqlite3")).close()
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path, "b" * 32)
    assert str(refused.value) == (
        "WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by another installation "
        f"({'a' * 32}, database sqlite3 {tmp_path}/a.sqlite3; claim file "
        f"{tmp_path}/200000.json): its tenants would run as the same uids as this "
        f"installation's ({'b' * 32}, database sqlite3 /srv/b.sqlite3). Give each "
        "installation a WORKBENCH_SANDBOX_UID_BASE of its own, or retire the claim with "
        "`manage.py retire_uid_claim` if the other installation is gone for good."
    )
    assert json.loads((tmp_path / "200000.json").read_text())["installation"] == "a" * 32


def test_a_claim_file_that_is_not_a_claim_is_refused(tmp_path):
    (tmp_path / "200000.json").write_bytes(b"\x80\x04garbage")
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path)
    assert str(refused.value) == (
        "WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by another installation "
        f"(unreadable claim, database unknown; claim file {tmp_path}/200000.json): its "
        "tenants would run as the same uids as this installation's "
        f"({'a' * 32}, database sqlite3 /srv/a.sqlite3). Give each installation a "
        "WORKBENCH_SANDBOX_UID_BASE of its own, or retire the claim with "
        "`manage.py retire_uid_claim` if the other installation is gone for good."
    )


def test_a_directory_that_cannot_be_made_is_refused_naming_the_setting(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path / "file" / "claims")
    assert str(refused.value).startswith(
        f"WORKBENCH_SANDBOX_UID_CLAIMS_DIR={tmp_path}/file/claims cannot be used: "
    )
    assert str(refused.value).endswith(
        ". Make it a directory only this user can write (mode 0700), or set "
        "WORKBENCH_SANDBOX=none if stdio servers need no sandbox."
    )


def test_a_directory_others_may_write_to_is_refused(tmp_path):
    directory = tmp_path / "claims"
    directory.mkdir(mode=0o777)
    os.chmod(directory, 0o777)
    with pytest.raises(UidRangeClaimed) as refused:
        claim(directory)
    assert str(refused.value) == (
        f"WORKBENCH_SANDBOX_UID_CLAIMS_DIR={directory} cannot be used: it may be written by "
        "others (mode 0777). Make it a directory only this user can write (mode 0700), or set "
        "WORKBENCH_SANDBOX=none if stdio servers need no sandbox."
    )


def test_a_symlinked_directory_is_refused(tmp_path):
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path / "link")
    assert str(refused.value) == (
        f"WORKBENCH_SANDBOX_UID_CLAIMS_DIR={tmp_path}/link cannot be used: it is a symbolic "
        "link. Make it a directory only this user can write (mode 0700), or set "
        "WORKBENCH_SANDBOX=none if stdio servers need no sandbox."
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_directory_of_another_user_is_refused(tmp_path):
    directory = tmp_path / "claims"
    directory.mkdir(mode=0o700)
    os.chown(directory, 4242, -1)
    with pytest.raises(UidRangeClaimed) as refused:
        claim(directory)
    assert str(refused.value) == (
        f"WORKBENCH_SANDBOX_UID_CLAIMS_DIR={directory} cannot be used: it belongs to uid "
        f"4242, not this gateway's ({os.geteuid()}). Make it a directory only this user can "
        "write (mode 0700), or set WORKBENCH_SANDBOX=none if stdio servers need no sandbox."
    )


def race(count: int, attempt: Callable[[int], None]) -> None:
    """`attempt(n)` for n in range(count), in threads started at once."""
    start = threading.Barrier(count)

    def run(n: int) -> None:
        start.wait()
        attempt(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_of_installations_claiming_at_once_exactly_one_wins(tmp_path):
    """Claims are made whole (written aside, then linked into place): a racing reader never
    sees half a claim, and two claimants never both win."""
    claims = tmp_path / "claims"
    installations = [f"{n:032x}" for n in range(8)]
    won: list[HeldClaim] = []
    lost: list[str] = []

    def attempt(n: int) -> None:
        database = tmp_path / f"{n}.sqlite3"  # eight databases, each there
        database.touch()
        try:
            won.append(held(claims, installations[n], database=str(database)))
        except UidRangeClaimed:
            lost.append(installations[n])

    race(len(installations), attempt)
    assert len(won) == 1 and len(lost) == len(installations) - 1
    [winner] = set(installations) - set(lost)
    assert json.loads((claims / "200000.json").read_text())["installation"] == winner
    assert [p.name for p in claims.iterdir()] == ["200000.json"]  # nothing left aside


def test_gateways_of_a_new_database_retiring_at_once_all_hold_its_claim(tmp_path):
    """Several workers of a database made anew retire the old installation's claim at once:
    one of them unlinks it, every one holds the new claim."""
    claim(tmp_path)  # installation A, database /srv/a.sqlite3: since made anew as B
    holds: list[HeldClaim] = []
    race(4, lambda n: holds.append(held(tmp_path, B, database="/srv/a.sqlite3")))
    assert len(holds) == 4
    assert json.loads((tmp_path / "200000.json").read_text())["installation"] == B
    assert claim_held(tmp_path, 200_000)
    for hold in holds:
        hold.close()
    assert not claim_held(tmp_path, 200_000)


# Starting again (issue 31)


def test_a_claim_of_this_database_made_anew_is_retired_with_a_warning(tmp_path, caplog):
    """`rm workbench.sqlite3 && make run`: the same database, a new installation."""
    claim(tmp_path)
    held(tmp_path, B, database="/srv/a.sqlite3").close()
    assert read_claim(tmp_path, 200_000).installation == B
    assert caplog.messages == [
        f"Retired the uid claim of installation {A}: its database sqlite3 /srv/a.sqlite3 is "
        f"now this installation's ({B}): it was made anew. WORKBENCH_SANDBOX_UID_BASE=200000 "
        f"is this installation's ({B}) now, and so are the files its tenants' uids own (their "
        "package caches)."
    ]


def test_an_old_claim_naming_this_database_is_retired_too(tmp_path):
    """A claim written before claims named their SQLite file (the issue's host)."""
    (tmp_path / "200000.json").write_text(
        json.dumps({"installation": A, "database": "sqlite3 /srv/b.sqlite3"})
    )
    claim(tmp_path, B)
    assert read_claim(tmp_path, 200_000).installation == B


def test_a_claim_whose_sqlite_file_is_missing_is_retired(tmp_path, caplog):
    """A checkout deleted, another whose base is the same: the first is gone for good."""
    claims = tmp_path / "claims"
    held(claims, A, database=str(tmp_path / "gone.sqlite3")).close()
    claim(claims, B)
    assert read_claim(claims, 200_000).installation == B
    assert caplog.messages[0].startswith(
        f"Retired the uid claim of installation {A}: its database sqlite3 {tmp_path}/gone."
        "sqlite3 is gone (its file is missing). WORKBENCH_SANDBOX_UID_BASE=200000 is this "
        f"installation's ({B}) now"
    )


def test_a_gone_installation_whose_gateway_still_runs_keeps_its_claim(tmp_path):
    """Its database deleted under a running gateway: the gateway's tenants still run as
    those uids, so a new one is refused until it stops, saying so in one line."""
    running = held(tmp_path)  # database /srv/a.sqlite3: never there, and still running
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path, B, base=200_000)
    assert str(refused.value) == (
        f"WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by installation {A}, "
        "whose database sqlite3 /srv/a.sqlite3 is gone (its file is missing), but a gateway "
        f"of it still runs (it holds the claim file {tmp_path}/200000.json). Stop that "
        "gateway, then start this one."
    )
    assert read_claim(tmp_path, 200_000).installation == A
    running.close()
    claim(tmp_path, B)
    assert read_claim(tmp_path, 200_000).installation == B


def test_the_operator_retires_a_claim_no_gateway_holds(tmp_path):
    assert retire_claim(tmp_path, 200_000) is None
    running = held(tmp_path)
    with pytest.raises(UidRangeClaimed) as refused:
        retire_claim(tmp_path, 200_000)
    assert str(refused.value) == (
        f"The claim of WORKBENCH_SANDBOX_UID_BASE=200000 ({A}, database sqlite3 "
        f"/srv/a.sqlite3; claim file {tmp_path}/200000.json) is held by a running gateway of "
        "that installation. Stop it first."
    )
    running.close()
    retired = retire_claim(tmp_path, 200_000)
    assert (retired.installation, retired.database) == (A, "sqlite3 /srv/a.sqlite3")
    assert not (tmp_path / "200000.json").exists()
