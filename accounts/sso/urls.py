"""/sso/<provider>/login, /callback (the redirect URI to register at the provider) and
/backchannel-logout (its back-channel logout URI)."""

from django.urls import path

from accounts.sso import views

urlpatterns = [
    path("<str:name>/login", views.start, name="sso_login"),
    path("<str:name>/callback", views.callback, name="sso_callback"),
    path("<str:name>/backchannel-logout", views.backchannel_logout, name="sso_backchannel_logout"),
]
