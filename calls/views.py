"""The approval page (issue 36): where a signed-in person approves or refuses one held
call, at `kernel.approvals.PAGE_PATH` (the link the caller was given).

The link alone decides nothing: the page asks who is signed in (the admin's login, which
offers the site's single sign-on, and comes back here), shows the call to those who may
see it (the tenant's members and operators, the caller in person, its named approvers)
and lets `calls.approvals.decide` say whether this person may decide it. Whoever else
signs in sees only why they may not (403)."""

from __future__ import annotations

from datetime import timedelta

from axes.helpers import get_client_ip_address  # type: ignore[import-untyped]
from django.contrib import admin, messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from calls import approvals as deciding
from calls.models import Approval
from kernel import approvals, roles

TEMPLATE = "calls/approval.html"
DECISIONS = {"approve": True, "refuse": False}
DONE = {
    True: "You approved this call: the caller may now call it again, once.",
    False: "You refused this call: the caller is told it was not approved.",
}
BAD_DECISION = "Choose Approve or Refuse."


def client_address(request: HttpRequest) -> str:
    """Where a decision came from, for the audit trail: the address django-axes counts
    logins by (the site's AXES_CLIENT_IP_CALLABLE: X-Forwarded-For only from trusted
    proxies)."""
    return str(get_client_ip_address(request) or "")


def may_see(approval: Approval, user: object) -> bool:
    """Who sees the call's details: the tenant's members and operators, the caller in
    person and its named approvers."""
    return (
        roles.can_view(user, approval.tenant_id)
        or approval.caller_person_id == getattr(user, "pk", None)
        or approval.approvers.filter(pk=getattr(user, "pk", None)).exists()
    )


def time_left(approval: Approval) -> str:
    """ "9 min 41 s" until a pending approval expires ("" once past)."""
    left = approval.expires_at - timezone.now()
    if left <= timedelta(0):
        return ""
    minutes, seconds = divmod(int(left.total_seconds()), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def _title(approval: Approval, refusal: str | None, shown: bool) -> str:
    if not shown:
        return "Not yours to decide"
    if approval.status == approvals.PENDING and refusal is None:
        return "Approve a call"
    return "A held call"


def _render(
    request: HttpRequest, approval: Approval, refusal: str | None, status: int = 200
) -> HttpResponse:
    shown = may_see(approval, request.user)
    context = {
        **admin.site.each_context(request),
        "title": _title(approval, refusal, shown),
        "approval": approval if shown else None,
        "refusal": refusal,
        "pending": approval.status == approvals.PENDING,
        "time_left": time_left(approval),
    }
    return render(request, TEMPLATE, context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
def approval_page(request: HttpRequest, public_id: str) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    approval = (
        Approval.objects.select_related("tenant", "decided_by").filter(public_id=public_id).first()
    )
    if approval is None:
        raise Http404("No approval here.")
    if request.method == "POST":
        return _decide(request, approval)
    deciding.expire_if_due(approval)
    refusal = deciding.refusal_for(approval, request.user)
    if approval.status != approvals.PENDING:
        return _render(request, approval, None)  # the state, to whoever may see it
    if refusal is not None:
        return _render(request, approval, refusal, status=403)
    return _render(request, approval, None)


def _decide(request: HttpRequest, approval: Approval) -> HttpResponse:
    choice = DECISIONS.get(request.POST.get("decision", ""))
    if choice is None:
        return _render(request, approval, BAD_DECISION, status=400)
    decided = deciding.decide(approval.pk, request.user, choice, client_address(request))
    if decided.refused_because is not None:
        if decided.approval.status != approvals.PENDING:
            return _render(request, decided.approval, decided.refused_because, status=409)
        return _render(request, decided.approval, decided.refused_because, status=403)
    messages.success(request, DONE[choice])
    return HttpResponseRedirect(request.path)
