"""The admin toolkit is installed for its templates (`admin/confirm_action.html`,
`admin/secret_once.html`) and its copy button (`admin_kit/copy.js`); it has no models."""

from django.apps import AppConfig


class AdminKitConfig(AppConfig):
    name = "kernel.admin_kit"
    label = "admin_kit"
    verbose_name = "Admin toolkit"
