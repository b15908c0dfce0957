"""The toolbox endpoint's prompts and completions: server-everything's prompts named
`everything__<prompt>`, got from their server with their own arguments, and completions of
a prompt's or a template's argument answered by the server that owns it."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, PromptReference, ResourceTemplateReference

from tests.harness.live import LiveGateway
from tests.harness.toolbox_world import endpoint, make_world, needs_node

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.once_pg,
    pytest.mark.xdist_group("toolbox_endpoint_prompts"),
    needs_node,
]


@pytest.fixture(scope="module")
def world(module_db):
    return make_world()


@pytest.fixture
def acme(world):
    return world[0].new_key()


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return endpoint(module_gateway, "acme", "dev")


async def test_prompts_are_listed_under_their_servers_name(dev, acme):
    async with dev.session(acme.key) as session:
        prompts = (await session.list_prompts()).prompts
    names = [prompt.name for prompt in prompts]
    assert "everything__simple-prompt" in names
    assert "everything__completable-prompt" in names
    assert all(name.startswith("everything__") for name in names)  # files has none
    team = next(p for p in prompts if p.name == "everything__completable-prompt")
    assert team.title == "Team Management"
    assert [argument.name for argument in team.arguments] == ["department", "name"]


async def test_a_prompt_is_got_from_its_server(dev, acme):
    async with dev.client(acme.key) as client:  # 2026-07-28
        got = await client.get_prompt(
            "everything__completable-prompt", {"department": "Sales", "name": "Eve"}
        )
    assert got.messages[0].content.text == "Please promote Eve to the head of the Sales team."


async def test_an_unknown_prompt_is_invalid_params(dev, acme):
    async with dev.session(acme.key) as session:
        with pytest.raises(MCPError) as refused:
            await session.get_prompt("simple-prompt")  # its own name: not this endpoint's
        assert refused.value.code == INVALID_PARAMS


async def test_a_prompts_argument_is_completed_by_its_server(dev, acme):
    async with dev.session(acme.key) as session:
        department = await session.complete(
            PromptReference(name="everything__completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
        member = await session.complete(
            PromptReference(name="everything__completable-prompt"),
            {"name": "name", "value": ""},
            context_arguments={"department": "Support"},
        )
        nothing = await session.complete(
            PromptReference(name="nothing__completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
    assert department.completion.values == ["Engineering"]
    assert member.completion.values == ["John", "Kim", "Lee"]
    assert nothing.completion.values == []


async def test_a_templates_argument_is_completed_by_its_server(dev, acme):
    async with dev.client(acme.key) as client:
        completed = await client.complete(
            ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"),
            {"name": "resourceId", "value": "12"},
        )
        refused = await client.complete(
            ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"),
            {"name": "resourceId", "value": "x"},
        )
    assert completed.completion.values == ["12"]  # its server's answer: a valid id
    assert refused.completion.values == []
