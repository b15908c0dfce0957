"""Pinned tool definitions recorded and decided: what a server offers now (a gateway
connect or an admin's check), an admin's approval or rejection, and the gateway's snapshot
of them. The models are `toolboxes.models.pins`; the rule applied is `kernel.pins`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from kernel.pins import TRUST_FIRST, digest
from toolboxes import versions
from toolboxes.models import PinState, Server, ToolPin


def held(queryset: models.QuerySet[ToolPin] | None = None) -> models.QuerySet[ToolPin]:
    """Pins whose offered definition is not the approved one (rejected ones included)."""
    queryset = ToolPin.objects.all() if queryset is None else queryset
    return queryset.exclude(offered_hash=models.F("approved_hash"))


def waiting(queryset: models.QuerySet[ToolPin] | None = None) -> models.QuerySet[ToolPin]:
    """Held pins an admin has not decided on yet (rejected ones left out)."""
    return held(queryset).exclude(offered_hash=models.F("rejected_hash"))


@dataclass(frozen=True, slots=True)
class ServerPins:
    """What the gateway's snapshot needs of one server."""

    approved: dict[str, str]
    trusted_fingerprint: str


def snapshot(server_ids: Iterable[int]) -> dict[int, ServerPins]:
    """Approved hashes and trusted fingerprint per server, in two queries.

    The trusted fingerprint is read first: a first offer recorded by another process
    between the two queries then leaves this snapshot trusting the offer as first (its
    approvals read too), never trusting a fingerprint without the approvals it came with,
    which would hold every tool until the next change.
    """
    ids = list(server_ids)
    trusted = dict(
        PinState.objects.filter(server_id__in=ids).values_list("server_id", "trusted_fingerprint")
    )
    approved: dict[int, dict[str, str]] = {server_id: {} for server_id in ids}
    rows = ToolPin.objects.filter(server_id__in=ids).exclude(approved_hash="")
    for server_id, name, approved_hash in rows.values_list("server_id", "name", "approved_hash"):
        approved[server_id][name] = approved_hash
    return {sid: ServerPins(approved[sid], trusted.get(sid, "")) for sid in ids}


def record_offer(
    server: Server, fingerprint: str, definitions: Iterable[Mapping[str, Any]]
) -> bool:
    """Record what a server offers now (a gateway connect or an admin's check).

    trust-first and a configuration not yet trusted: everything offered is approved, and
    tools no longer offered are forgotten. Otherwise new or changed tools are recorded as
    held. Returns whether the gateway's snapshot must change (and bumps the version then).
    """
    offered = {item["name"]: (dict(item), digest(item)) for item in definitions}
    now = timezone.now()
    with transaction.atomic():
        state, _ = PinState.objects.select_for_update().get_or_create(server=server)
        pins = {pin.name: pin for pin in ToolPin.objects.filter(server=server)}
        trust = server.pinning == TRUST_FIRST and state.trusted_fingerprint != fingerprint
        changed = trust
        for name, (definition, offered_hash) in offered.items():
            pin = pins.get(name) or ToolPin(server=server, name=name)
            if pin.pk and pin.offered_hash == offered_hash and not trust:
                continue
            pin.offered_hash, pin.offered_definition, pin.offered_at = offered_hash, definition, now
            if trust:
                pin.approved_hash, pin.approved_definition, pin.decided_at = (
                    offered_hash,
                    definition,
                    now,
                )
            pin.save()
        if trust:
            ToolPin.objects.filter(server=server).exclude(name__in=offered).delete()
            state.trusted_fingerprint, state.trusted_at = fingerprint, now
            state.save()
        if changed:
            tenant_id = server.toolbox.tenant_id
            transaction.on_commit(lambda: versions.bump(tenant_id))
    return changed


def approve(pins: Iterable[ToolPin]) -> int:
    """Approve what each pin's server offers now; running gateways follow within a second."""
    return _decide(pins, approve=True)


def reject(pins: Iterable[ToolPin]) -> int:
    """Keep each pin's offered definition out for good (until the server offers another)."""
    return _decide(pins, approve=False)


def _decide(pins: Iterable[ToolPin], *, approve: bool) -> int:
    count = 0
    tenants: set[int] = set()
    now = timezone.now()
    with transaction.atomic():
        for pin in pins:
            if approve:
                pin.approved_hash = pin.offered_hash
                pin.approved_definition = pin.offered_definition
                pin.rejected_hash = ""
            else:
                pin.rejected_hash = pin.offered_hash
            pin.decided_at = now
            pin.save()
            tenants.add(pin.server.toolbox.tenant_id)
            count += 1
        for tenant_id in tenants:
            transaction.on_commit(lambda tenant_id=tenant_id: versions.bump(tenant_id))
    return count
