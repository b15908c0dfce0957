"""Model fields for secrets: a flat string map whose values are encrypted in the database,
and one encrypted string."""

from typing import Any

from django.db import models

from kernel import crypto


class EncryptedStringMapField(models.JSONField):
    """A `{name: value}` map; names stay readable, values are stored as Fernet tokens.

    In Python the attribute holds plaintext values; only the database sees ciphertext.
    Values that are not strings are left for model validation to reject by name.
    """

    description = "String map with encrypted values"

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            value = {
                key: crypto.encrypt(item) if isinstance(item, str) else item
                for key, item in value.items()
            }
        return super().get_prep_value(value)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, dict):
            return {
                key: crypto.decrypt(item) if isinstance(item, str) else item
                for key, item in value.items()
            }
        return value


class EncryptedStringField(models.TextField):
    """One secret string (a webhook's signing secret); stored as a Fernet token, plaintext
    in Python, empty stays empty."""

    description = "String encrypted at rest"

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return crypto.encrypt(value) if isinstance(value, str) and value else value

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return crypto.decrypt(value) if isinstance(value, str) and value else value
