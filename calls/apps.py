from django.apps import AppConfig


class CallsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "calls"
    verbose_name = "Calls"

    def ready(self) -> None:
        from calls import signals  # noqa: F401  (a new approval tells the webhook)
