from django.apps import AppConfig


class ToolboxesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "toolboxes"
    verbose_name = "Workbench configuration"

    def ready(self) -> None:
        from toolboxes import (
            signals,  # models are loaded only once the app is ready
            system_checks,  # noqa: F401  # registers its checks
        )

        signals.connect_signals()
