"""A failure in two voices: a phrase safe to show a client, and the detail for the
operator's log. Raised wherever the reason is already known (the egress policy, the
gateway's sandbox and transports), so that what a client hears never depends on how far
up the failure travelled."""

from __future__ import annotations


class ClassifiedFailure(Exception):
    """A failure whose client-facing phrase is already known.

    `phrase` is safe to show a client (no stderr, no expanded values, no network detail);
    `detail` is for the operator's log only.
    """

    def __init__(self, phrase: str, detail: str = "") -> None:
        super().__init__(phrase)
        self.phrase = phrase
        self.detail = detail or phrase
