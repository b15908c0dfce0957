"""Respawn policy for one downstream server: bounded exponential backoff, then a cool-down.

A server that crashes once is respawned at once; one that keeps failing waits longer each
time (up to `backoff_max`), and after `failures_before_cooldown` failures in a row it is
left alone for `cooldown` seconds with a clear error instead of a respawn storm. A
successful call ends the streak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

BACKOFF_BASE_SECONDS = 0.1


@dataclass
class RespawnPolicy:
    backoff_max: float = 5.0
    cooldown: float = 30.0
    failures_before_cooldown: int = 5


@dataclass
class ServerHealth:
    policy: RespawnPolicy
    failures: int = 0
    not_before: float = 0.0
    last_reason: str = field(default="")

    def failed(self, reason: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.failures += 1
        self.last_reason = reason
        if self.failures >= self.policy.failures_before_cooldown:
            self.not_before = now + self.policy.cooldown
        else:
            backoff = BACKOFF_BASE_SECONDS * 2 ** (self.failures - 2) if self.failures > 1 else 0
            self.not_before = now + min(backoff, self.policy.backoff_max)

    def succeeded(self) -> None:
        self.failures = 0
        self.not_before = 0.0

    def in_cooldown(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        return self.failures >= self.policy.failures_before_cooldown and now < self.not_before

    def wait_seconds(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return max(0.0, self.not_before - now)
