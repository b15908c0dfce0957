"""Admin forms: write-only secrets and API key scopes within their tenant."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from toolboxes.models import ApiKey, Server

MASK = "********"
SECRET_FIELDS = ("env", "headers")
SECRET_HELP = (
    'A JSON object of names to values, e.g. {"API_TOKEN": "${API_TOKEN}"}. Stored values are '
    f"shown as {MASK}: leave that to keep a value, type a new one to replace it, remove the "
    "name to delete it. Values are encrypted at rest."
)


def masked(values: dict[str, str] | None) -> str:
    """`NAME=********` for lists: the names an admin needs, never the values."""
    return ", ".join(f"{name}={MASK}" for name in (values or {})) or "—"


class ServerForm(forms.ModelForm):
    env = forms.JSONField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text=SECRET_HELP
    )
    headers = forms.JSONField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text=SECRET_HELP
    )

    class Meta:
        model = Server
        fields = "__all__"
        widgets = {
            "args": forms.Textarea(attrs={"rows": 2}),
            "tool_filters": forms.Textarea(attrs={"rows": 1}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in SECRET_FIELDS:
            self.initial[field] = {name: MASK for name in self._stored(field)}

    def _stored(self, field: str) -> dict[str, str]:
        if self.instance.pk is None:
            return {}
        return getattr(self.instance, field) or {}

    def _clean_secret(self, field: str) -> dict[str, Any]:
        value = self.cleaned_data.get(field)
        if value in (None, ""):
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Enter a JSON object of names to values.")
        stored = self._stored(field)
        result = {}
        for name, item in value.items():
            if item == MASK:
                if name not in stored:
                    raise ValidationError(f"Enter a value for '{name}'.")
                item = stored[name]
            result[name] = item
        return result

    def clean_env(self) -> dict[str, Any]:
        return self._clean_secret("env")

    def clean_headers(self) -> dict[str, Any]:
        return self._clean_secret("headers")


class ApiKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["tenant", "label", "toolboxes", "expires_at"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        toolboxes = cleaned.get("toolboxes") or []
        foreign = [
            str(toolbox) for toolbox in toolboxes if tenant and toolbox.tenant_id != tenant.pk
        ]
        if foreign:
            self.add_error(
                "toolboxes",
                f"These toolboxes belong to another tenant: {', '.join(foreign)}.",
            )
        return cleaned
