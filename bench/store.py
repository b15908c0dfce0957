"""What the shared store costs per call: the embedded store (the default, shared by every
process of the machine) against local memory (one process only), and Redis when reachable.

    .venv/bin/python bench/store.py [--blocks 10] [--block-calls 20] [--quick]

- `use_tool` p50 through two gateway processes that differ only in CACHE_URL, in
  interleaved blocks (the order rotating), ratio = median of per-block p50 ratios;
- the store's own operations, in-process: microseconds per `get` and per `set` (what one
  `use_tool` does: the tenant's version and the key's open entry are read; an entry is
  written again at most once per tenth of the idle time).
"""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    Row,
    arguments,
    gateway,
    gateway_session,
    median,
    report,
    timed,
    use_call,
)
from tests.harness.services import REDIS_URL, redis_reachable

SECTION = "6 store"
EMBEDDED = "embedded (default)"
LOCAL = "local memory"


def op_costs(backend: object, count: int) -> tuple[float, float]:
    """Microseconds per get and per set, as the gateway calls them."""
    from mcp_gateway import EmbeddedStore

    retry = {"retry": True} if isinstance(backend, EmbeddedStore) else {}
    raw = backend.backend if retry else backend  # type: ignore[attr-defined]
    raw.set("wb:bench:entry", time.time(), 3600)
    start = time.perf_counter()
    for _ in range(count):
        raw.get("wb:bench:entry", None, **retry)
    get_us = (time.perf_counter() - start) / count * 1e6
    start = time.perf_counter()
    for _ in range(count):
        raw.set("wb:bench:entry", time.time(), 3600)
    set_us = (time.perf_counter() - start) / count * 1e6
    return get_us, set_us


def store_rows(count: int) -> list[Row]:
    import django
    from django.conf import settings

    from tests.harness.keys import TEST_FERNET_KEY

    with tempfile.TemporaryDirectory(prefix="wb-bench-store-") as workdir:
        from mcp_gateway import REDIS_BACKEND, EmbeddedStore, embedded_store

        settings.configure(
            SECRET_KEY="bench",
            ENCRYPTION_KEYS=[TEST_FERNET_KEY],
            CACHES={
                "default": embedded_store(workdir),
                "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
                **(
                    {
                        "redis": {
                            "BACKEND": REDIS_BACKEND,
                            "LOCATION": f"{REDIS_URL}/14",
                        }
                    }
                    if redis_reachable()
                    else {}
                ),
            },
        )
        django.setup()
        from django.core.cache import caches

        rows = []
        backends = {EMBEDDED: EmbeddedStore(caches["default"]), LOCAL: caches["local"]}
        if "redis" in settings.CACHES:
            backends["Redis (Django's sync client, for scale)"] = caches["redis"]
        for name, backend in backends.items():
            get_us, set_us = op_costs(backend, count)
            rows.append(Row(SECTION, f"{name}: µs per get / set", f"{get_us:.1f} / {set_us:.1f}"))
        return rows


async def call_rows(blocks: int, block_calls: int) -> list[Row]:
    with gateway() as embedded, gateway(cache_url="locmemcache://workbench") as local:
        async with AsyncExitStack() as stack:
            paths = {}
            for name, running in ((EMBEDDED, embedded), (LOCAL, local)):
                session = await stack.enter_async_context(gateway_session(running.url, running.key))
                paths[name] = session
                for _ in range(10):  # warm-up
                    await session.call_tool("use_tool", use_call())
            samples: dict[str, list[float]] = {name: [] for name in paths}
            ratios = []
            for block in range(blocks):
                order = list(paths) if block % 2 == 0 else list(reversed(paths))
                p50 = {}
                for name in order:
                    session = paths[name]
                    got = await timed(
                        lambda s=session: s.call_tool("use_tool", use_call()), block_calls
                    )
                    samples[name] += got
                    p50[name] = median(got)
                ratios.append(p50[EMBEDDED] / p50[LOCAL])
    rows = [
        Row(SECTION, f"use_tool p50 (ms), {name}", f"{median(values):.2f}")
        for name, values in samples.items()
    ]
    rows.append(
        Row(
            SECTION,
            "use_tool p50 embedded / local memory, median of block ratios",
            f"{median(ratios):.3f}",
        )
    )
    rows.append(
        Row(
            SECTION,
            "what the shared store adds per use_tool (ms, p50 difference)",
            f"{median(samples[EMBEDDED]) - median(samples[LOCAL]):.3f}",
        )
    )
    return rows


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--block-calls", type=int, default=20)
    options = parser.parse_args()
    blocks, calls, ops = (
        (2, 3, 200) if options.quick else (options.blocks, options.block_calls, 20000)
    )
    rows = anyio.run(call_rows, blocks, calls) + store_rows(ops)
    report(rows, options.json, "What the shared store costs")


if __name__ == "__main__":
    main()
