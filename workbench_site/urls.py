from django.contrib import admin
from django.urls import include, path

from accounts.sso.login_form import LoginForm
from api.site import api
from workbench_site import favicon, health

admin.site.site_header = "Workbench administration"
admin.site.site_title = "Workbench"
admin.site.index_title = "Tenants, keys and toolboxes"
# The admin is the only site: no "View site" link to a page that does not exist.
admin.site.site_url = None
# The login page offers the identity providers' buttons (accounts/sso/).
admin.site.login_form = LoginForm
admin.site.login_template = "accounts/sso/login.html"

urlpatterns = [
    path("admin/", admin.site.urls),
    # The management API (api/): scripts and GitOps, with its OpenAPI document.
    path("api/v1/", api.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", favicon.favicon, name="favicon"),
    # Connected accounts: a person's sign-in to a remote server (link, callback, client).
    path("connections/", include("connections.urls")),
    # OAuth 2.1 sign-in for tenant members: metadata, consent, token, registration.
    path("", include("accounts.oauth_urls")),
    # A held call's approval page (issue 36), signed-in people only.
    path("", include("calls.urls")),
    # Single sign-on through the operator's identity providers.
    path("sso/", include("accounts.sso.urls")),
]
