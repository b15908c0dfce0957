"""Masking: how a secret value is shown to an admin (never as itself)."""

MASK = "********"  # a stored secret value a form keeps (toolboxes.admin.forms)


def masked(values: dict[str, str] | None) -> str:
    """`NAME=********` for lists: the names an admin needs, never the values."""
    return ", ".join(f"{name}={MASK}" for name in (values or {})) or "—"
