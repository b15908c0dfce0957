"""A connection for a declared set records what the server offers such a client for
pinning only (`records.write_set_offer`): the tool it adds waits for an admin, while the
server's status (its tools in the admin, the stored listing searches read) stays the base
connection's."""

import pytest

from mcp_gateway.database.records import write_connection, write_set_offer
from toolboxes.models import Server, ToolPin

pytestmark = pytest.mark.django_db

ECHO = {"name": "echo", "description": "Echo the text back", "inputSchema": {"type": "object"}}
ASK = {"name": "ask", "description": "Ask the client a form", "inputSchema": {"type": "object"}}


@pytest.fixture
def server(make_tenant, make_toolbox, make_server):
    return make_server(make_toolbox(make_tenant("acme")), "everything")


def statuses(server) -> dict[str, str]:
    return {pin.name: pin.status for pin in ToolPin.objects.filter(server=server)}


def test_a_sets_offer_is_held_for_an_admin_and_leaves_the_status_alone(server):
    write_connection(server.pk, "trust-first", "fp", True, 5, "", [ECHO])  # the base's
    write_set_offer(server.pk, "trust-first", "fp", True, 7, "", [ECHO, ASK])
    assert statuses(server) == {"echo": "approved", "ask": "held: new"}
    stored = Server.objects.get(pk=server.pk)
    assert [tool["name"] for tool in stored.last_check_tools] == ["echo"]


def test_nothing_is_recorded_when_pinning_is_off_or_the_connect_failed(server):
    write_set_offer(server.pk, "off", "fp", True, 7, "", [ECHO, ASK])
    write_set_offer(server.pk, "trust-first", "fp", False, 7, "refused", [])
    assert statuses(server) == {}
    assert Server.objects.get(pk=server.pk).last_check_tools in (None, [])
