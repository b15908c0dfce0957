"""The consent page of the authorization server.

Token, revocation and registration are DOT's views (`accounts.oauth_urls`); the consent
page is DOT's authorization view with the member's choices added: which tenant (of its
memberships), which toolboxes (all, or some: the same scoping as an API key). The grant it
records is what every token issued from the code resolves to.

Only a tenant's admins may connect a client to /mcp: a viewer reads the configuration in
the admin, and /mcp runs the tenant's tools (README "People and access"). A sign-in for the
management API (scope `api`, resource `/api/v1`) acts with the member's role in the chosen
tenant, whichever it is, and chooses no toolboxes. An error in an
authorization request of a client nobody verified (it registered itself) is shown here,
never sent to its redirect URI: that would make this server an open redirector for
anyone who registers a client (RFC 6749 §4.1.2.1 allows it for an invalid one).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import get_application_model
from oauth2_provider.views import (
    AuthorizationView,
)
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.middleware import CSP_FORM_ACTION_ATTRIBUTE
from accounts.models import GrantScope, Membership, OAuthGrant, OneTimePassword
from accounts.oauth_clients import redirect_uri_refusal
from accounts.oauth_config import API_SCOPE, MCP_SCOPE
from accounts.oauth_validator import GRANT_CREDENTIAL
from accounts.oauth_views import api_resource_id, resource_id
from accounts.sso.login_form import login_url
from kernel.roles import ADMIN
from toolboxes.models import Toolbox

SELF_REGISTERED = ("dcr", "cimd")  # RegistrationSource values of clients nobody vetted
ONE_KIND = f"Ask for scope {MCP_SCOPE} or scope {API_SCOPE}, not both."
NOT_A_MEMBER = "You are not a member of any tenant: ask a tenant admin to add you."
VIEWER_ONLY = (
    "You are a viewer of your tenants: only a tenant's admins may connect a client, which "
    "runs the tenant's tools. Ask a tenant admin."
)
NOT_SENT_BACK = (
    "Workbench did not send you back to {host}: the client registered itself and nobody "
    "has verified it."
)
CHANGE_PASSWORD = "Change your one-time password in the admin first, then sign in again."


def _canonical(uri: str) -> str:
    parts = urlsplit(uri)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


class ConsentForm(AllowForm):
    tenant = forms.TypedChoiceField(coerce=int, widget=forms.RadioSelect)
    toolboxes = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, user: Any, api: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        memberships = Membership.objects.filter(user=user).select_related("tenant")
        active = [m for m in memberships if m.tenant.is_active]
        # The management API acts with the member's role, whichever; /mcp runs tools.
        tenants = [m.tenant for m in active if api or m.role == ADMIN]
        self.viewer_of = [m.tenant for m in active if not api and m.role != ADMIN]
        self.fields["tenant"].choices = [(t.pk, f"{t.name or t.slug} ({t.slug})") for t in tenants]
        if len(tenants) == 1:
            self.fields["tenant"].initial = tenants[0].pk
        self.toolbox_rows = list(
            Toolbox.objects.filter(tenant__in=[] if api else tenants)
            .select_related("tenant")
            .order_by("tenant__slug", "name")
        )
        self.fields["toolboxes"].choices = [
            (tb.pk, f"{tb.tenant.slug} / {tb.name}") for tb in self.toolbox_rows
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        tenant_id = data.get("tenant")
        chosen = set(data.get("toolboxes") or [])
        rows = self.toolbox_rows
        other = [tb.name for tb in rows if tb.pk in chosen and tb.tenant_id != tenant_id]
        if tenant_id is not None and other:
            raise forms.ValidationError(
                f"These toolboxes are not in the chosen tenant: {', '.join(sorted(other))}."
            )
        return data


class ConsentView(AuthorizationView):
    """DOT's authorization endpoint: log in (the admin's login, or the identity
    provider's), then consent."""

    template_name = "accounts/oauth/consent.html"
    form_class = ConsentForm

    def get_login_url(self) -> str:
        """The admin's login page (with the identity providers' buttons), or the only
        provider itself when local passwords are off (accounts.sso)."""
        return login_url()

    # --- the request, checked before anything is shown -------------------------------

    def validate_authorization_request(self, request: HttpRequest) -> tuple[Any, Any]:
        """DOT's checks (client, redirect URI, PKCE S256), one kind of scope, then the
        resource: required, and this server's MCP endpoint (scope mcp) or its management
        API (scope api)."""
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") != "S256":  # oauthlib's default: plain
            raise _refused(
                credentials, "The code_challenge_method must be S256.", error="invalid_request"
            )
        if API_SCOPE in scopes and len(set(scopes)) > 1:
            raise _refused(credentials, ONE_KIND, error="invalid_scope")
        expected = _expected_resource(request, scopes)
        resources = request.GET.getlist("resource")
        if not resources:
            raise _refused(credentials, f"The resource parameter is required: use '{expected}'.")
        for resource in resources:
            if _canonical(resource) != _canonical(expected):
                raise _refused(
                    credentials, f"The resource '{resource}' is not served here: use '{expected}'."
                )
        return scopes, credentials

    def error_response(self, error: OAuthToolkitError, application: Any, **kwargs: Any):
        """Errors the client may hear go back to its redirect URI (DOT) when the client is
        verified, or when the member pressed Deny on the page that named where it goes;
        other errors of an unverified client are a page here. Errors about the client or
        redirect URI themselves (unknown, unregistered) are JSON, never a page."""
        redirect, response = OAuthLibMixin.error_response(self, error, **kwargs)
        oauth_error = response["error"]
        if redirect:
            application = application or _application_of_request(self.request)
            if _may_redirect_errors(application) or (
                self.request.method == "POST" and oauth_error.error == "access_denied"
            ):
                return self.redirect(response["url"], application)
            return self._error_page(oauth_error, application)
        return JsonResponse(
            {"error": oauth_error.error, "error_description": oauth_error.description},
            status=oauth_error.status_code,
        )

    def _error_page(self, oauth_error: Any, application: Any) -> HttpResponse:
        host = urlsplit(oauth_error.redirect_uri or "").netloc
        context = {
            **plain_page_context(),
            "title": "Connect a client to Workbench",
            "error": oauth_error,
            "client_name": (application.name or application.client_id) if application else "",
            "not_sent_back": NOT_SENT_BACK.format(host=host or "the client"),
        }
        return TemplateResponse(
            self.request, self.template_name, context, status=oauth_error.status_code
        )

    # --- the page ------------------------------------------------------------------------

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "user": self.request.user, "api": self._api()}

    def _api(self) -> bool:
        """Whether the sign-in asked for is the management API's (scope api)."""
        scope = self.request.POST.get("scope") or self.request.GET.get("scope") or ""
        return API_SCOPE in scope.split()

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        form = context["form"]
        application = context.get("application") or _application(form)
        redirect_uri = form["redirect_uri"].value() or ""
        context.update(plain_page_context())
        context.update(
            title="Connect a client to Workbench",
            application=application,
            client_name=(application.name or application.client_id) if application else "",
            unverified=application is not None
            and application.registration_source in SELF_REGISTERED,
            redirect_host=urlsplit(redirect_uri).netloc,
            redirect_source=csp_source(redirect_uri),
            viewer_of=form.viewer_of,
            api=self._api(),
            refusal=self._refusal(form),
        )
        return context

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        """The consent page: its form's answer redirects to the client (CSP form-action)."""
        response = super().render_to_response(context, **kwargs)
        if context.get("redirect_source"):
            setattr(response, CSP_FORM_ACTION_ATTRIBUTE, (context["redirect_source"],))
        return response

    def _refusal(self, form: ConsentForm) -> str:
        pending = OneTimePassword.objects.filter(user=self.request.user).select_related("user")
        if any(otp.is_pending() for otp in pending):
            return CHANGE_PASSWORD
        if not form.fields["tenant"].choices:
            return VIEWER_ONLY if form.viewer_of else NOT_A_MEMBER
        return ""

    # --- the member's answer -----------------------------------------------------------

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        if form.cleaned_data.get("allow") and self._refusal(form):
            return self.form_invalid(form)
        self._choice = form.cleaned_data
        return super().form_valid(form)

    def create_authorization_response(
        self, request: HttpRequest, scopes: str, credentials: dict[str, Any], allow: bool
    ) -> Any:
        """Record the grant and issue its code in one transaction (a refused request
        leaves no grant behind); the validator ties the code to the grant."""
        if not allow:
            return super().create_authorization_response(request, scopes, credentials, allow)
        api = API_SCOPE in scopes.split()
        expected = _expected_resource(request, [API_SCOPE] if api else [])
        resources = credentials.get("resource") or []
        if not resources or any(_canonical(r) != _canonical(expected) for r in resources):
            raise _refused(credentials, f"The resource must be '{expected}'.")
        refusal = redirect_uri_refusal(credentials["redirect_uri"])
        if refusal:
            raise _refused(credentials, refusal, error="invalid_request")
        with transaction.atomic():
            grant = OAuthGrant.objects.create(
                user=request.user,
                tenant_id=self._choice["tenant"],
                application=_application_of(credentials["client_id"]),
                limited=bool(self._choice.get("toolboxes")) and not api,
                scope=GrantScope.API if api else GrantScope.MCP,
            )
            if self._choice.get("toolboxes") and not api:
                grant.toolboxes.set(self._choice["toolboxes"])
            credentials[GRANT_CREDENTIAL] = grant.pk
            return super().create_authorization_response(request, scopes, credentials, allow)


def plain_page_context() -> dict[str, Any]:
    """The consent page is a page of its own, not the admin's: the site's name, none of
    the admin's menu or tools (`admin.site.each_context` would draw the operator's whole
    sidebar around a client's question)."""
    return {"site_header": admin.site.site_header, "site_title": admin.site.site_title}


def _expected_resource(request: HttpRequest, scopes: list[str]) -> str:
    return api_resource_id(request) if API_SCOPE in scopes else resource_id(request)


def _refused(
    credentials: dict[str, Any], description: str, error: str = "invalid_target"
) -> OAuthToolkitError:
    return OAuthToolkitError(
        error=CustomOAuth2Error(
            error=error, description=description, state=credentials.get("state")
        ),
        redirect_uri=credentials["redirect_uri"],
    )


def _application_of(client_id: str) -> Any:
    return get_application_model().objects.get(client_id=client_id)


def _application(form: forms.Form) -> Any:
    client_id = form["client_id"].value()
    return get_application_model().objects.filter(client_id=client_id).first()


def _application_of_request(request: HttpRequest) -> Any:
    client_id = request.GET.get("client_id") or request.POST.get("client_id")
    if not client_id:
        return None
    return get_application_model().objects.filter(client_id=client_id).first()


def _may_redirect_errors(application: Any) -> bool:
    """Only a client an operator created (not one that registered itself) hears errors at
    its redirect URI before the member has seen where that is."""
    return application is not None and application.registration_source not in SELF_REGISTERED


def csp_source(uri: str) -> str:
    """The CSP source of a redirect URI: its origin, or its scheme alone when the host
    cannot be written as one (an IPv6 address, a custom scheme without a host)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme or not scheme.isascii() or not all(c.isalnum() or c in "+-." for c in scheme):
        return ""
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return ""
    if host and host.isascii() and all(c.isalnum() or c in "-." for c in host):
        return f"{scheme}://{host}{port}"
    return f"{scheme}:"
