"""The secrets guard: credentials out of a tool's result before it reaches the client.

A tenant switches it on (`PolicyDefaults.guard_secrets`, carried in its snapshot); then
every `use_tool` result is walked (text content, embedded resources' text, every string of
`structuredContent`) and each credential found is replaced by a marker naming its kind
(`[secret removed: AWS Access Key]`): what Yelp's detect-secrets finds with its
high-precision, pattern-based plugins (no entropy or keyword heuristics: those flag commit
ids and hashes), and every value of the server's own stored secrets (its env and header
values, as its connection's redactor knows them). What was found is returned as kinds and
counts, never the values. The plugins' `verify` (which would call the vendors) is never
called: scanning is local.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from kernel.redaction import Redactor

STORED_SECRET = "stored secret"  # the kind of a value of the server's own secrets

# The plugins run: each a set of vendor patterns. Left out: the entropy and keyword
# detectors, basic auth, JWT, IP addresses, and those whose pattern matches inside
# base64 data (Artifactory's `AKC…`) or that need a keyword beside the value.
_PLUGINS: tuple[RegexBasedDetector, ...] = (
    AWSKeyDetector(),
    PrivateKeyDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    SlackDetector(),
    StripeDetector(),
    OpenAIDetector(),
    PypiTokenDetector(),
    NpmDetector(),
    SendGridDetector(),
    TwilioKeyDetector(),
    DiscordBotTokenDetector(),
    TelegramBotTokenDetector(),
    AzureStorageKeyDetector(),
    MailchimpDetector(),
    SquareOAuthDetector(),
)
# A private key's block, whole: the plugin finds its header only. In JSON-escaped text its
# line breaks are `\n`; a block without its end is cut from its header on.
_PEM_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*-----|\Z)"
    r"|PuTTY-User-Key-File-2.*?(?:Private-MAC: *[0-9a-fA-F]+|\Z)",
    re.DOTALL,
)
# Cheap pre-checks: a string none of whose characters could start a credential is
# skipped (most of a result's strings are short words).
_MIN_LENGTH = 16


def _matches(plugin: RegexBasedDetector, text: str) -> set[str]:
    """What the plugin's patterns match, whole: the plugin's own `analyze_string` yields a
    pattern's first group where it has one, which for some is the vendor's prefix alone
    (`ghp`); the value itself where the group is one (AWS's secret key after its name)."""
    found = set()
    for pattern in plugin.denylist:
        for match in pattern.finditer(text):
            group = match.group(1) if pattern.groups else None
            found.add(group if group is not None and len(group) >= 16 else match.group(0))
    return found


def marker(kind: str) -> str:
    return f"[secret removed: {kind}]"


@dataclass(frozen=True, slots=True)
class Found:
    """What the guard removed from one result: each kind and how often (never a value)."""

    counts: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.counts)

    @property
    def total(self) -> int:
        return sum(count for _, count in self.counts)


NOTHING = Found()


class _Scan:
    def __init__(self, redactors: Iterable[Redactor]) -> None:
        self.stored = Redactor.joined(redactors)
        self.counts: Counter[str] = Counter()

    def clean(self, text: str) -> str:
        if len(text) < 4:
            return text
        if self.stored:
            replaced, removed = self.stored.subn(text, marker(STORED_SECRET))
            if removed:  # else the same string: unchanged parts stay the same objects
                text = replaced
                self.counts[STORED_SECRET] += removed
        if len(text) < _MIN_LENGTH:
            return text
        for plugin in _PLUGINS:
            found = _matches(plugin, text)
            if not found:
                continue
            kind = plugin.secret_type
            if isinstance(plugin, PrivateKeyDetector):
                replaced, removed = _PEM_BLOCK.subn(marker(kind), text)
                if removed:
                    text = replaced
                    self.counts[kind] += removed
                    continue  # the headers went with their blocks
            for secret in sorted(found, key=len, reverse=True):
                removed = text.count(secret)
                if removed:
                    text = text.replace(secret, marker(kind))
                    self.counts[kind] += removed
        return text

    def walk(self, value: Any) -> Any:
        """A structured value with its strings cleaned (the same object when unchanged)."""
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, dict):
            cleaned = {key: self.walk(item) for key, item in value.items()}
            same = all(cleaned[key] is value[key] for key in value)
            return value if same else cleaned
        if isinstance(value, list):
            items = [self.walk(item) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    def content(self, block: types.ContentBlock) -> types.ContentBlock:
        if isinstance(block, types.TextContent):
            text = self.clean(block.text)
            return block if text is block.text else block.model_copy(update={"text": text})
        if isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.TextResourceContents
        ):
            text = self.clean(block.resource.text)
            if text is block.resource.text:
                return block
            resource = block.resource.model_copy(update={"text": text})
            return block.model_copy(update={"resource": resource})
        return block  # images, audio, blobs and links carry no text to scan


# A result whose text is longer is scanned in a worker thread (about 65 µs a KiB: 1 MiB
# would hold the event loop for some 70 ms; bench/secret_guard.py).
IN_THREAD_CHARS = 64 * 1024


def text_length(result: types.CallToolResult) -> int:
    """The length of a result's text content and embedded text (its structured content
    usually repeats it): whether to scan it in a thread."""
    total = 0
    for block in result.content:
        if isinstance(block, types.TextContent):
            total += len(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.TextResourceContents
        ):
            total += len(block.resource.text)
    return total


def guard(
    result: types.CallToolResult, redactors: Iterable[Redactor] = ()
) -> tuple[types.CallToolResult, Found]:
    """`result` with its credentials and the server's stored secret values replaced, and
    what was removed. Unchanged (the same object) when nothing was found."""
    scan = _Scan(redactors)
    content = [scan.content(block) for block in result.content]
    structured = scan.walk(result.structured_content)
    if not scan.counts:
        return result, NOTHING
    cleaned = result.model_copy(update={"content": content, "structured_content": structured})
    return cleaned, Found(tuple(sorted(scan.counts.items())))


def masked(text: str, redactors: Iterable[Redactor] = ()) -> str:
    """`text` with its credentials and the server's stored secret values replaced, as a
    result's are (a held call's arguments, shown to its approvers: `metatools.approvals`)."""
    return _Scan(redactors).clean(text)
