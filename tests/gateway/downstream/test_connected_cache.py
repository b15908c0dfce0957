"""What a process keeps of connected accounts is bounded: the least recently used sign-in
is let go (and read again from the database when next needed)."""

from __future__ import annotations

from mcp_gateway.downstream.connected import accounts
from mcp_gateway.downstream.connected.accounts import ConnectedAccounts


def test_the_least_recently_used_sign_ins_are_let_go(monkeypatch):
    monkeypatch.setattr(accounts, "SAVED_ENTRIES", 2)
    kept = ConnectedAccounts(door=None)
    kept._store((1, 10), None, 1)
    kept._store((2, 10), None, 1)
    kept._store((1, 10), None, 2)  # used again: the most recent
    kept._store((3, 10), None, 1)
    assert list(kept._saved) == [(1, 10), (3, 10)]
