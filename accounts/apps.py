from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"
    verbose_name = "People and access"

    def ready(self) -> None:
        from accounts import (
            oauth_revocation,  # models are loaded only once the app is ready
            policy_signals,
            system_checks,  # noqa: F401  # registers its checks
        )

        oauth_revocation.connect_signals()  # OAuth tokens stop when their grant or member goes
        policy_signals.connect_signals()  # tool policies naming groups see the groups change
