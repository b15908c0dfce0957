"""The admin's invitation form: a tenant, a username and a role.

Operators may name an existing user; a tenant admin only a new one (an existing account
belongs to someone who never agreed to join), and hears one answer for every existing
account outside the tenant, whoever's it is."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from accounts.members import NOT_AVAILABLE
from accounts.models import Membership
from kernel.roles import is_operator

OPERATOR_HELP = (
    "An existing user joins this tenant; a new one is created with a one-time password, "
    "shown once after saving."
)
TENANT_ADMIN_HELP = (
    "A new user, created with a one-time password shown once after saving (an existing "
    "account can be added by an operator only)."
)


class InviteForm(forms.ModelForm):
    username = forms.CharField(max_length=150, help_text=TENANT_ADMIN_HELP)
    may_attach_existing = False  # set for operators by `for_user`

    class Meta:
        model = Membership
        fields = ["tenant", "username", "role"]

    @classmethod
    def for_user(cls, user: Any) -> type[InviteForm]:
        """The form as `user` may use it (operators: existing users too)."""
        if not is_operator(user):
            return cls
        return type("OperatorInviteForm", (cls,), {"may_attach_existing": True})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.may_attach_existing:
            self.fields["username"].help_text = OPERATOR_HELP

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        field = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD)
        for validator in field.validators:
            validator(username)
        return username

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant, username = cleaned.get("tenant"), cleaned.get("username")
        if not (tenant and username):
            return cleaned
        user_model = get_user_model()
        if tenant.memberships.filter(**{f"user__{user_model.USERNAME_FIELD}": username}).exists():
            self.add_error("username", "This user is already a member of this tenant.")
        elif (
            not self.may_attach_existing
            and user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).exists()
        ):
            self.add_error("username", NOT_AVAILABLE)
        return cleaned
