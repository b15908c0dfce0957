"""The server form's tool filters: the server's own tools to tick (as offered at its last
check), "all tools", and other names for a server never checked. Reads the older JSON
post (`tool_filters=["*"]`) too."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from toolboxes.admin.widgets import INVALID_JSON
from toolboxes.server_status import filter_warning

ALL_TOOLS = "*"
NOT_CHECKED_NOTE = "The server has not been checked yet: check it to list its tools, or type names."
FAILED_NOTE = (
    "Its tools are not known: its last check failed ({}). Check it again once fixed, or type names."
)


class ToolChoices(forms.Widget):
    """A tick for "all tools, including future ones", one per tool the server offered at
    its last check, and a box for other names (a server never checked)."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.offered: list[dict[str, Any]] | None = None  # None: never discovered
        self.failed_reason = ""  # never discovered: its last check failed for this reason

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if f"{name}__present" not in data:
            return data.get(name)  # an older post: the list as JSON
        chosen = list(data.getlist(name)) if hasattr(data, "getlist") else [data.get(name)]
        chosen += re.split(r"[\s,]+", data.get(f"{name}__other") or "")
        return [item for item in chosen if item]

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data and f"{name}__present" not in data

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        chosen = value if isinstance(value, list) else []
        offered = self.offered or []
        offered_names = [tool["name"] for tool in offered]
        everything = ALL_TOOLS in chosen
        items = [
            self._box(
                name,
                ALL_TOOLS,
                everything,
                format_html("<strong>{}</strong>", "All tools, including future ones"),
                "wb-all",
            )
        ]
        for tool in offered:
            about = tool.get("title") or tool.get("description") or ""
            label = format_html(
                '<code>{}</code> <span title="{}">{}</span>',
                tool["name"],
                tool.get("description") or "",
                about if len(about) <= 60 else about[:59] + "…",
            )
            items.append(self._box(name, tool["name"], tool["name"] in chosen, label, "wb-tool"))
        unknown = [item for item in chosen if item != ALL_TOOLS and item not in offered_names]
        listed_unknown = unknown if self.offered is not None and not everything else []
        for item in listed_unknown:
            label = format_html(
                '<code>{}</code> <span class="wb-warning">not offered by the server</span>', item
            )
            items.append(self._box(name, item, True, label, "wb-tool wb-missing"))
        typed = "" if self.offered is not None else " ".join(unknown)
        note = "Other tool names:"
        if self.offered is None:
            note = NOT_CHECKED_NOTE
            if self.failed_reason:
                note = FAILED_NOTE.format(self.failed_reason)
        # One line above the ticks (the unticked names are marked among them too).
        warning = (
            format_html(
                '<p class="wb-warning wb-missing-note" role="note">{}</p>',
                filter_warning(listed_unknown),
            )
            if listed_unknown
            else ""
        )
        return format_html(
            '<div class="wb-tools-field">{}<div class="wb-tools" data-name="{}">{}'
            '<p class="wb-other">{} <input type="text" name="{}__other" value="{}" size="40" '
            'aria-label="other tool names"></p><input type="hidden" name="{}__present" '
            'value="1"></div></div>',
            warning,
            name,
            format_html_join("", "{}", ((item,) for item in items)),
            note,
            name,
            typed,
            name,
        )

    @staticmethod
    def _box(name: str, value: str, checked: bool, label: SafeString, css: str) -> SafeString:
        return format_html(
            '<label class="{}"><input type="checkbox" name="{}" value="{}"{}> {}</label>',
            css,
            name,
            value,
            " checked" if checked else "",
            label,
        )


class ToolFiltersField(forms.Field):
    widget = ToolChoices

    def to_python(self, value: Any) -> Any:
        if value is None:
            return []  # left out of the post: the model keeps its value
        if isinstance(value, str):  # an older post: JSON
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValidationError(INVALID_JSON, code="invalid") from None
        if ALL_TOOLS in value:
            return [ALL_TOOLS]
        return list(dict.fromkeys(value))

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(initial) != self.to_python(data)
        except ValidationError:
            return True
