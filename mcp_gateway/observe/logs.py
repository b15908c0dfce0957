"""LOG_FORMAT=json: one JSON object per line (time, level, logger, message, and tenant,
session, request and incident ids where the record or the request being served knows
them). Set as the console handler's formatter in settings.LOGGING."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from mcp_gateway.observe.request_context import current_request


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = current_request()
        if request is not None:
            if request.tenant:
                entry["tenant"] = request.tenant
            if request.request_id:
                entry["request_id"] = request.request_id
            if request.session_id:
                entry["session_id"] = request.session_id
        for name in ("tenant", "incident", "key_prefix", "request_id", "server", "mcp_level"):
            value = getattr(record, name, None)
            if value:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
