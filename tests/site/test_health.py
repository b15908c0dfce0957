"""The probes answer without credentials and say nothing secret."""

from unittest import mock


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_database_and_cache(client, db):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": True, "cache": True},
        "details": {"sandbox": "bwrap"},
    }


def test_readyz_shows_an_unsandboxed_gateway(client, db, settings):
    settings.WORKBENCH_SANDBOX = "none"
    response = client.get("/readyz")
    assert response.status_code == 200  # remote servers, and stdio ones, still work
    assert response.json()["details"] == {
        "sandbox": "none: stdio servers run unsandboxed, as the gateway's own user"
    }


def test_readyz_unavailable_when_the_cache_fails(client, db):
    with mock.patch("workbench_site.health.cache.get", side_effect=ConnectionError("down")):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": True, "cache": False}


def test_probes_refuse_other_methods(client):
    assert client.post("/healthz").status_code == 405


def test_readyz_says_warming_while_a_replica_starts_its_servers(client, db):
    from mcp_gateway import warming

    warming.set()
    try:
        response = client.get("/readyz")
    finally:
        warming.clear()
    assert response.status_code == 503
    assert response.json()["status"] == "warming"
    assert response.json()["checks"] == {"database": True, "cache": True}
    assert client.get("/readyz").json()["status"] == "ok"
