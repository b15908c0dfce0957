"""The admin's invitation form: a tenant, a username (new or existing) and a role."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from accounts.models import Membership


class InviteForm(forms.ModelForm):
    username = forms.CharField(
        max_length=150,
        help_text="An existing user joins this tenant; a new one is created with a one-time "
        "password, shown once after saving.",
    )

    class Meta:
        model = Membership
        fields = ["tenant", "username", "role"]

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        field = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD)
        for validator in field.validators:
            validator(username)
        return username

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant, username = cleaned.get("tenant"), cleaned.get("username")
        if tenant and username and tenant.memberships.filter(user__username=username).exists():
            self.add_error("username", "This user is already a member of this tenant.")
        return cleaned
