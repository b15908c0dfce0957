"""The gateway's sealed `requestState` (metatools.input_state): it opens to the server's
state for the credential and tool it was sealed for, until it expires; altered, expired,
another credential's or another tool's, sealed with keys the installation no longer has,
it opens to nothing."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.test import override_settings

from mcp_gateway.metatools.input_state import STATE_TTL, Bound, StateRefused, seal, unseal

BOUND = Bound("key:1", "dev", "probe", "ask_form")
NOW = 1_800_000_000.0


def test_it_opens_to_the_servers_state_for_its_caller_and_tool():
    assert (
        unseal(BOUND, seal(BOUND, "server-state", now=NOW), now=NOW + 1).server_state
        == "server-state"
    )
    assert unseal(BOUND, seal(BOUND, None, now=NOW), now=NOW).server_state is None


def test_the_servers_state_is_not_readable_in_it():
    assert "server-state" not in seal(BOUND, "server-state", now=NOW)


@pytest.mark.parametrize(
    "other",
    [
        Bound("key:2", "dev", "probe", "ask_form"),
        Bound("grant:1", "dev", "probe", "ask_form"),
        Bound("key:1", "ops", "probe", "ask_form"),
        Bound("key:1", "dev", "other", "ask_form"),
        Bound("key:1", "dev", "probe", "ask_url"),
    ],
)
def test_another_caller_or_tool_gets_nothing(other):
    with pytest.raises(StateRefused):
        unseal(other, seal(BOUND, "server-state", now=NOW), now=NOW)


def test_an_expired_state_opens_to_nothing():
    state = seal(BOUND, "server-state", now=NOW)
    assert unseal(BOUND, state, now=NOW + STATE_TTL).server_state == "server-state"
    with pytest.raises(StateRefused):
        unseal(BOUND, state, now=NOW + STATE_TTL + 1)


@pytest.mark.parametrize("state", ["", "probe-state", "gAAAAA", "not base64 at all!"])
def test_what_the_gateway_did_not_seal_opens_to_nothing(state):
    with pytest.raises(StateRefused):
        unseal(BOUND, state, now=NOW)


def test_an_altered_state_opens_to_nothing():
    state = seal(BOUND, "server-state", now=NOW)
    middle = len(state) // 2
    altered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
    with pytest.raises(StateRefused):
        unseal(BOUND, altered, now=NOW)


def test_any_process_with_the_installations_keys_opens_it_and_rotation_keeps_it():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(ENCRYPTION_KEYS=[old]):
        state = seal(BOUND, "server-state", now=NOW)
    with override_settings(ENCRYPTION_KEYS=[new, old]):
        assert unseal(BOUND, state, now=NOW).server_state == "server-state"
    with override_settings(ENCRYPTION_KEYS=[new]), pytest.raises(StateRefused):
        unseal(BOUND, state, now=NOW)


def test_an_approved_calls_run_travels_with_its_state() -> None:
    state = seal(BOUND, "server-state", approved="d" * 64, now=NOW)
    assert unseal(BOUND, state, now=NOW).approved == "d" * 64
    assert unseal(BOUND, seal(BOUND, None, now=NOW), now=NOW).approved == ""
