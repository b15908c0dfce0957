"""Export, import into an empty tenant, export again: the same JSON, for generated
configurations (a property, not one example)."""

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.headers import UNCONFIGURABLE_HEADERS
from toolboxes.config_file import dumps, export_tenant, import_tenant
from toolboxes.models import Tenant

# Text any database keeps as it was: no NUL, no lone surrogates.
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=20,
)
non_blank = text.filter(lambda value: value.strip() != "")
names = st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True)
env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
# Any header a configuration may hold: the gateway's own (Host, hop-by-hop) are refused
# on import, and that refusal has tests of its own (test_reserved_headers.py).
header_names = st.from_regex(r"[A-Za-z0-9-]{1,12}", fullmatch=True).filter(
    lambda name: name.lower() not in UNCONFIGURABLE_HEADERS
)
filters = st.one_of(st.just(["*"]), st.lists(non_blank, max_size=4))


def sorted_map(keys, values):
    return st.dictionaries(keys, values, max_size=3).map(lambda d: dict(sorted(d.items())))


def with_optional(server: dict, timeout: int, enabled: bool, idle: int | None = None) -> dict:
    if timeout != 60:
        server["timeout"] = timeout
    if idle is not None:
        server["idleTimeout"] = idle
    if not enabled:
        server["enabled"] = False
    return server


@st.composite
def stdio_servers(draw):
    server = {
        "command": draw(non_blank),
        "args": draw(st.lists(text, max_size=4)),
        "env": draw(sorted_map(env_names, text)),
    }
    cwd = draw(st.one_of(st.just(""), non_blank))
    if cwd:
        server["cwd"] = cwd
    server["toolFilters"] = draw(filters)
    return with_optional(
        server,
        draw(st.integers(1, 600)),
        draw(st.booleans()),
        draw(st.none() | st.integers(1, 86_400)),
    )


@st.composite
def remote_servers(draw):
    host = draw(st.from_regex(r"[a-z0-9]{1,10}(\.[a-z]{2,5})?", fullmatch=True))
    server = {
        "type": draw(st.sampled_from(["streamable-http", "sse"])),
        "url": f"{draw(st.sampled_from(['http', 'https']))}://{host}/{draw(names)}",
        "headers": draw(sorted_map(header_names, text)),
        "toolFilters": draw(filters),
    }
    return with_optional(
        server,
        draw(st.integers(1, 600)),
        draw(st.booleans()),
        draw(st.none() | st.integers(1, 86_400)),
    )


def toolbox(description: str, offered_alone: bool, servers: dict) -> dict:
    """A toolbox not offered as an MCP server of its own says so; one offered says nothing."""
    found: dict = {"description": description}
    if not offered_alone:
        found["offeredAlone"] = False
    found["mcpServers"] = servers
    return found


toolboxes = st.builds(
    toolbox,
    non_blank,
    st.booleans(),
    st.dictionaries(names, st.one_of(stdio_servers(), remote_servers()), max_size=4),
)
configurations = st.fixed_dictionaries({"toolboxes": st.dictionaries(names, toolboxes, max_size=3)})

slugs = (f"t{index}" for index in itertools.count())


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(configurations)
def test_export_import_export_is_identical(db, configuration):
    first = Tenant.objects.create(slug=next(slugs))
    import_tenant(first, configuration)
    exported = dumps(export_tenant(first))
    # A file written in this form by hand exports back unchanged ...
    assert json.loads(exported) == configuration
    assert exported == dumps(configuration)
    # ... and importing the export into an empty tenant exports the same text again.
    second = Tenant.objects.create(slug=next(slugs))
    import_tenant(second, json.loads(exported))
    assert dumps(export_tenant(second)) == exported
