"""The secrets guard's walk of a tool result: each place a result carries text (text
content, an embedded resource's text, every string of structuredContent) cleaned, other
content left alone, the same object back when nothing was found, kinds and counts never
a value."""

from __future__ import annotations

import mcp_types as types
import pytest

from kernel.redaction import Redactor
from mcp_gateway.metatools.secret_guard import NOTHING, guard

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"
SLACK_TOKEN = "xoxb-" + "123456789012-1234567890123-abcdefghijklmnopqrstuvwx"
STRIPE_KEY = "sk_live_" + "abcdefghijklmnopqrstuvwx"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content: types.ContentBlock, structured: object = None) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured)


def test_text_content_is_cleaned_with_each_kind_counted():
    cleaned, found = guard(result(text(f"id {AWS_KEY_ID}, {GITHUB_TOKEN} and {AWS_KEY_ID}")))
    assert cleaned.content[0].text == (
        "id [secret removed: AWS Access Key], [secret removed: GitHub Token] and "
        "[secret removed: AWS Access Key]"
    )
    assert found.counts == (("AWS Access Key", 2), ("GitHub Token", 1))
    assert found.total == 3


def test_a_private_key_goes_whole_in_plain_and_json_escaped_text():
    escaped = PEM.replace("\n", "\\n")
    cleaned, found = guard(result(text(f"key:\n{PEM}\nend"), text(f'{{"key": "{escaped}"}}')))
    assert [block.text for block in cleaned.content] == [
        "key:\n[secret removed: Private Key]\nend",
        '{"key": "[secret removed: Private Key]"}',
    ]
    assert found.counts == (("Private Key", 2),)


def test_structured_content_strings_are_cleaned_at_any_depth():
    structured = {"a": [1, {"b": SLACK_TOKEN}], "c": STRIPE_KEY, "d": None, "e": "plain"}
    cleaned, found = guard(result(text("see the structure"), structured=structured))
    assert cleaned.structured_content == {
        "a": [1, {"b": "[secret removed: Slack Token]"}],
        "c": "[secret removed: Stripe Access Key]",
        "d": None,
        "e": "plain",
    }
    assert structured["c"] == STRIPE_KEY  # the server's result itself is not changed
    assert dict(found.counts) == {"Slack Token": 1, "Stripe Access Key": 1}


def test_an_embedded_resource_text_is_cleaned_and_binary_content_left_alone():
    resource = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri="file:///k", text=f"key={GITHUB_TOKEN}"),
    )
    blob = types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(uri="file:///b", blob="Z2hwXw=="),
    )
    image = types.ImageContent(type="image", data="QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", mime_type="x")
    cleaned, found = guard(result(resource, blob, image))
    assert cleaned.content[0].resource.text == "key=[secret removed: GitHub Token]"
    assert cleaned.content[1] is blob and cleaned.content[2] is image
    assert found.counts == (("GitHub Token", 1),)


def test_the_servers_stored_secrets_are_replaced_in_each_spelling():
    stored = Redactor(['s3cret-value-with "quote"'])
    cleaned, found = guard(
        result(text('plain s3cret-value-with "quote" and json "s3cret-value-with \\"quote\\""')),
        [stored],
    )
    assert cleaned.content[0].text == (
        'plain [secret removed: stored secret] and json "[secret removed: stored secret]"'
    )
    assert found.counts == (("stored secret", 2),)


@pytest.mark.parametrize(
    "ordinary",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Ada <ada@example.com>",
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "index 83db48f..bf269f4 100644\n--- a/README.md\n+++ b/README.md",
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "uuid 123e4567-e89b-12d3-a456-426614174000, password: hunter2",
    ],
)
def test_ordinary_text_is_not_taken_for_a_secret(ordinary):
    given = result(text(ordinary), structured={"value": ordinary})
    cleaned, found = guard(given)
    assert cleaned is given and found is NOTHING and not found
