"""Every validation rule names its field, and the database refuses what clean() would."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from toolboxes.models import Server, Tenant, Toolbox


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="d")


def errors_of(instance) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as error:
        instance.full_clean()
    return error.value.message_dict


def stdio(toolbox, **fields) -> Server:
    return Server(toolbox=toolbox, **{"name": "s", "command": "uvx", **fields})


def remote(toolbox, **fields) -> Server:
    return Server(
        toolbox=toolbox,
        **{"name": "r", "transport": "streamable-http", "url": "https://x.test/mcp", **fields},
    )


@pytest.mark.parametrize("name", ["has space", "slash/y", "ünï", "", "semi;colon"])
def test_names_use_letters_digits_dash_underscore_dot(toolbox, name):
    assert "name" in errors_of(Toolbox(tenant=toolbox.tenant, name=name, description="d"))
    assert "name" in errors_of(stdio(toolbox, name=name))


def test_valid_names(toolbox):
    stdio(toolbox, name="my-server_2.0").full_clean()
    Toolbox(tenant=toolbox.tenant, name="a.b-c_d", description="d").full_clean()


def test_toolbox_description_is_required(toolbox):
    assert "description" in errors_of(Toolbox(tenant=toolbox.tenant, name="x", description=""))


def test_toolbox_names_unique_per_tenant_only(toolbox):
    duplicate = Toolbox(tenant=toolbox.tenant, name="dev", description="d")
    assert errors_of(duplicate)["__all__"] == ["This tenant already has a toolbox of this name."]
    other = Tenant.objects.create(slug="other")
    Toolbox(tenant=other, name="dev", description="d").full_clean()


def test_server_names_unique_per_toolbox(toolbox):
    stdio(toolbox).save()
    assert errors_of(stdio(toolbox))["__all__"] == [
        "This toolbox already has a server of this name."
    ]


def test_stdio_needs_a_command(toolbox):
    assert errors_of(stdio(toolbox, command=" "))["command"] == ["A stdio server needs a command."]


def test_remote_needs_a_url(toolbox):
    assert errors_of(remote(toolbox, url=""))["url"] == ["A remote server needs a URL."]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x.test/mcp", "URL must start with http:// or https://"),
        ("x.test/mcp", "URL must start with http:// or https://"),
        ("http://", "URL must name a host"),
    ],
)
def test_remote_url_scheme_and_host(toolbox, url, message):
    assert errors_of(remote(toolbox, url=url))["url"] == [message]


def test_references_are_allowed_in_urls(toolbox):
    remote(toolbox, url="${MCP_BASE_URL}/mcp").full_clean()
    remote(toolbox, url="https://${HOST}/mcp").full_clean()


def test_fields_of_the_other_transport_are_refused(toolbox):
    assert "url" in errors_of(stdio(toolbox, url="https://x.test"))
    assert "headers" in errors_of(stdio(toolbox, headers={"A": "b"}))
    assert "command" in errors_of(remote(toolbox, command="uvx"))
    assert "env" in errors_of(remote(toolbox, env={"A": "b"}))
    assert "args" in errors_of(remote(toolbox, args=["x"]))


@pytest.mark.parametrize(
    ("args", "message"),
    [("not a list", "must be a list of strings"), (["ok", 2], "item 1 must be a string")],
)
def test_args_are_a_list_of_strings(toolbox, args, message):
    assert errors_of(stdio(toolbox, args=args))["args"] == [message]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (["A=b"], "must be an object of environment variable names to strings"),
        ({"1BAD": "x"}, "'1BAD' is not a valid environment variable name"),
        ({"A-B": "x"}, "'A-B' is not a valid environment variable name"),
        ({"A": 1}, "value of 'A' must be a string"),
        ({"A": {"nested": "x"}}, "value of 'A' must be a string"),
    ],
)
def test_env_is_a_flat_string_map_with_valid_names(toolbox, env, message):
    assert errors_of(stdio(toolbox, env=env))["env"] == [message]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Bad Header": "x"}, "'Bad Header' is not a valid header name"),
        ({"X-Ok": 5}, "value of 'X-Ok' must be a string"),
    ],
)
def test_headers_are_a_flat_string_map_with_valid_names(toolbox, headers, message):
    assert errors_of(remote(toolbox, headers=headers))["headers"] == [message]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ("*", "must be a list of strings"),
        (["ok", ""], "item 1 must not be empty"),
        ([3], "item 0 must be a string"),
    ],
)
def test_tool_filters_are_non_empty_strings(toolbox, filters, message):
    assert errors_of(stdio(toolbox, tool_filters=filters))["tool_filters"] == [message]


def test_empty_filter_list_means_no_tools(toolbox):
    stdio(toolbox, tool_filters=[]).full_clean()


def test_timeout_is_at_least_one_second(toolbox):
    assert "timeout" in errors_of(stdio(toolbox, timeout=0))


def test_idle_timeout_is_empty_or_at_least_one_second(toolbox):
    assert "idle_timeout" in errors_of(stdio(toolbox, idle_timeout=0))
    stdio(toolbox, idle_timeout=None).full_clean()
    stdio(toolbox, idle_timeout=30).full_clean()


def test_defaults(toolbox):
    server = stdio(toolbox)
    server.full_clean()
    assert (server.tool_filters, server.timeout, server.enabled, server.transport) == (
        ["*"],
        60,
        True,
        "stdio",
    )


# The database refuses the same rows when full_clean() is bypassed.


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "bad name", "command": "uvx"},
        {"name": "s", "command": ""},
        {"name": "s", "transport": "streamable-http", "url": ""},
        {"name": "s", "transport": "carrier-pigeon", "command": "x"},
        {"name": "s", "command": "uvx", "timeout": 0},
        {"name": "s", "command": "uvx", "idle_timeout": 0},
    ],
)
def test_database_constraints(toolbox, fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        Server.objects.create(toolbox=toolbox, **fields)


def test_database_refuses_duplicate_names(toolbox):
    Server.objects.create(toolbox=toolbox, name="s", command="uvx")
    with pytest.raises(IntegrityError), transaction.atomic():
        Server.objects.create(toolbox=toolbox, name="s", command="uvx")
    with pytest.raises(IntegrityError), transaction.atomic():
        Toolbox.objects.create(tenant=toolbox.tenant, name="dev", description="d")
    with pytest.raises(IntegrityError), transaction.atomic():
        Toolbox.objects.create(tenant=toolbox.tenant, name="x", description="")
