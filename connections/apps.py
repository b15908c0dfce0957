from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "connections"
    verbose_name = "Connected accounts"

    def ready(self) -> None:
        from connections import signals  # models are loaded only once the app is ready

        signals.connect_signals()
