"""One store per deployment (issue 23): each gateway records the shared store it uses at
its start; a management command whose store is another refuses to run, naming both
(`toolboxes.system_checks`), instead of writing where no gateway reads."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from kernel.store_names import describe_store
from toolboxes.installation import record_store, recorded_store

pytestmark = pytest.mark.django_db

ELSEWHERE = "redis redis.internal:6379/0"


def test_nothing_recorded_nothing_refused() -> None:
    assert recorded_store() is None
    call_command("check")


def test_the_gateways_own_store_passes() -> None:
    assert record_store(describe_store(settings.CACHES["default"])) is None
    call_command("check")


def test_another_store_is_refused_naming_both() -> None:
    record_store(ELSEWHERE)
    _, when = recorded_store() or ("", None)
    mine = describe_store(settings.CACHES["default"])
    with pytest.raises(SystemCheckError) as refused:
        call_command("check")
    text = str(refused.value)
    assert (
        f"(workbench.E001) This process's shared store is not the gateways': it uses {mine}; "
        f"the gateways of this database use {ELSEWHERE} (recorded at a gateway's start, "
        f"{when:%Y-%m-%d %H:%M} UTC). A change made here would reach no gateway (a revoked "
        "key would go on working)."
    ) in text
    assert (
        "HINT: Run it with the gateways' CACHE_URL (or WORKBENCH_STORE_DIR for the embedded "
        "store); if those gateways are gone for good, start one with this store, or pass "
        "--skip-checks."
    ) in text


def test_a_gateway_on_another_store_is_told_which_one_was_used_before() -> None:
    assert record_store(ELSEWHERE) is None  # the first record
    assert record_store(ELSEWHERE) is None  # the same again
    assert record_store("redis other:6379/1") == ELSEWHERE
    assert recorded_store()[0] == "redis other:6379/1"  # type: ignore[index]


def test_a_redis_store_is_described_without_its_password() -> None:
    setting = {
        "BACKEND": "mcp_gateway.store.backends.JsonRedisCache",
        "LOCATION": "redis://:s3cret@cache.internal:6380/2",
    }
    assert describe_store(setting) == "redis cache.internal:6380/2"
