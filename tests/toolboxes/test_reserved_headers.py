"""Host and hop-by-hop headers belong to the gateway: they cannot be configured, in the
admin's models or through import_config (an error naming the header)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from toolboxes.config_file import ConfigError, import_tenant
from toolboxes.models import Server, Tenant, Toolbox

RESERVED = [
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "keep-alive",
    "TE",
    "Upgrade",
    "Proxy-Authorization",
    "Trailer",
    "Expect",
]


@pytest.mark.django_db
@pytest.mark.parametrize("header", RESERVED)
def test_a_reserved_header_cannot_be_configured(header):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
    server = Server(
        toolbox=toolbox,
        name="r",
        transport="streamable-http",
        url="https://example.org/mcp",
        headers={header: "evil.example", "X-Team": "blue"},
    )
    with pytest.raises(ValidationError) as error:
        server.full_clean()
    assert error.value.message_dict["headers"] == [
        f"'{header}' cannot be configured: the gateway sets it for each request"
    ]
    data = {
        "toolboxes": {
            "dev2": {
                "description": "imported",
                "mcpServers": {
                    "r": {
                        "type": "streamable-http",
                        "url": "https://example.org/mcp",
                        "headers": {header: "x"},
                        "toolFilters": ["*"],
                    }
                },
            }
        }
    }
    with pytest.raises(ConfigError) as imported:
        import_tenant(tenant, data)
    assert f"'{header}' cannot be configured: the gateway sets it for each request" in str(
        imported.value
    )
    assert not Toolbox.objects.filter(name="dev2").exists()
