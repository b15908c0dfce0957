"""One installation per sandbox uid range on a host (issue 20): the claim file of a uid base
names the installation (database) whose tenants run as those uids; another is refused."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mcp_gateway.downstream.sandbox.uid_claims import UidRangeClaimed, claim_uid_base


def claim(directory: Path, installation: str = "a" * 32, base: int = 200_000) -> Path:
    claim_uid_base(directory, base, installation, f"sqlite3 /srv/{installation[:1]}.sqlite3")
    return directory / f"{base}.json"


def test_a_first_claim_makes_a_private_directory_and_names_the_installation(tmp_path):
    directory = tmp_path / "var" / "uid-claims"
    path = claim(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "installation": "a" * 32,
        "database": "sqlite3 /srv/a.sqlite3",
    }


def test_the_same_installation_claims_again_and_other_bases_are_free(tmp_path):
    claim(tmp_path)
    claim(tmp_path)  # another worker, a restart: the same installation
    claim(tmp_path, "b" * 32, base=300_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["200000.json", "300000.json"]


def test_another_installation_is_refused_naming_both_and_the_setting(tmp_path):
    claim(tmp_path)
    with pytest.raises(UidRangeClaimed) as refused:
        claim(tmp_path, "b" * 32)
    assert str(refused.value) == (
        "WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by another installation "
        f"({'a' * 32}, database sqlite3 /srv/a.sqlite3; claim file {tmp_path}/200000.json): "
        "its tenants would run as the same uids as this installation's "
        f"({'b' * 32}, database sqlite3 /srv/b.sqlite3). Give each installation a "
        "WORKBENCH_SANDBOX_UID_BASE of its own, or delete the claim file if the other "
        "installation is gone for good."
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
        "WORKBENCH_SANDBOX_UID_BASE of its own, or delete the claim file if the other "
        "installation is gone for good."
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


def test_of_installations_claiming_at_once_exactly_one_wins(tmp_path):
    """Claims are made whole (written aside, then linked into place): a racing reader never
    sees half a claim, and two claimants never both win."""
    import threading

    installations = [f"{n:032x}" for n in range(8)]
    start = threading.Barrier(len(installations))
    won: list[str] = []
    lost: list[str] = []

    def attempt(installation: str) -> None:
        start.wait()
        try:
            claim(tmp_path, installation)
            won.append(installation)
        except UidRangeClaimed:
            lost.append(installation)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in installations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == len(installations) - 1
    assert json.loads((tmp_path / "200000.json").read_text())["installation"] == won[0]
    assert [p.name for p in tmp_path.iterdir()] == ["200000.json"]  # nothing left aside
