"""Incident ids: what joins a short reason told to a client to the operator's log line
holding the whole story (a downstream's failure, the shared store's)."""

import secrets


def new_incident_id() -> str:
    return secrets.token_hex(6)
