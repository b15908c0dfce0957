"""/sso/<provider>/login, /callback (the redirect URI to register at the provider) and
/backchannel-logout (its back-channel logout URI), /frontchannel-logout (or its
front-channel one, where it has only that and the provider opted in: `frontchannel_logout`)."""

from django.urls import path

from accounts.sso import logout_views, views

urlpatterns = [
    path("<str:name>/login", views.start, name="sso_login"),
    path("<str:name>/callback", views.callback, name="sso_callback"),
    path(
        "<str:name>/backchannel-logout",
        logout_views.backchannel_logout,
        name="sso_backchannel_logout",
    ),
    path(
        "<str:name>/frontchannel-logout",
        logout_views.frontchannel_logout,
        name="sso_frontchannel_logout",
    ),
]
