"""Server form fields an admin can read: args one per line, env and headers as name/value
rows (values write-only), tool filters as the server's own tools to tick.

Each field also reads the older single-value JSON post (`args=["-y", "pkg"]`,
`env={"A": "b"}`, `tool_filters=["*"]`), so scripts and pasted client configurations keep
working.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from toolboxes.checks import filter_warning

MASK = "********"  # a stored secret value the form keeps (toolboxes.forms)
ALL_TOOLS = "*"
MAX_ROWS = 200
EXTRA_ROWS = 2
INVALID_JSON = "Enter a valid JSON."


def _pasted_json(text: str, kind: type) -> Any:
    """A JSON list or object pasted whole (a client's configuration), else None."""
    stripped = text.strip()
    opener, closer = ("[", "]") if kind is list else ("{", "}")
    if not (stripped.startswith(opener) and stripped.endswith(closer)):
        return None
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, kind) else None


# args: one per line


class LinesField(forms.Field):
    """A list of strings, typed one per line (blank lines are skipped)."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 60, "class": "wb-lines"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[Any]:
        if isinstance(value, list):
            return value
        if not value:
            return []
        pasted = _pasted_json(value, list)
        if pasted is not None:
            return pasted  # model validation names any item that is not a string
        return [line.strip() for line in str(value).splitlines() if line.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial or []) != self.to_python(data)


# env and headers: name/value rows, values never shown


class NameValueRows(forms.Widget):
    """Rows of a name input and a password input; a stored value is never rendered (left
    empty, it is kept), a ticked "remove" drops the row."""

    def __init__(self, attrs: dict[str, Any] | None = None, *, name_label: str = "name") -> None:
        super().__init__(attrs)
        self.name_label = name_label
        self.stored: set[str] = set()  # names with a stored value (set by the form)

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if name in data:
            return data.get(name)  # an older post: the whole map as JSON
        try:
            count = min(int(data.get(f"{name}__rows", 0)), MAX_ROWS)
        except (TypeError, ValueError):
            count = 0
        rows = []
        for index in range(count):
            if data.get(f"{name}__remove__{index}"):
                continue
            key = (data.get(f"{name}__name__{index}") or "").strip()
            value = data.get(f"{name}__value__{index}") or ""
            if key or value:
                rows.append((key, value))
        return rows

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data and f"{name}__rows" not in data

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        if isinstance(value, Mapping):
            names = list(value)
        elif isinstance(value, list):
            names = [key for key, _ in value]
        else:
            names = []
        names += [""] * EXTRA_ROWS
        rows = format_html_join(
            "", "{}", ((self._row(name, index, key),) for index, key in enumerate(names))
        )
        return format_html(
            '<div class="wb-rows-widget"><table class="wb-rows"><thead><tr><th>{}</th>'
            "<th>value</th><th></th></tr></thead><tbody>{}</tbody></table>"
            '<input type="hidden" name="{}__rows" value="{}" class="wb-rows-count">'
            '<button type="button" class="button wb-add-row">Add a row</button></div>',
            self.name_label,
            rows,
            name,
            len(names),
        )

    def _row(self, name: str, index: int, key: str) -> SafeString:
        hint = "stored: leave empty to keep" if key and key in self.stored else ""
        remove = (
            format_html(
                '<label><input type="checkbox" name="{}__remove__{}"> remove</label>', name, index
            )
            if key
            else ""
        )
        return format_html(
            '<tr><td><input type="text" name="{}__name__{}" value="{}" size="24" '
            'aria-label="{}"></td><td><input type="password" name="{}__value__{}" '
            'autocomplete="new-password" size="32" placeholder="{}" aria-label="value">'
            "</td><td>{}</td></tr>",
            name,
            index,
            key,
            self.name_label,
            name,
            index,
            hint,
            remove,
        )


class SecretMapField(forms.Field):
    """`{name: value}`; a row left empty keeps its stored value (the form turns `MASK`
    back into it, or says the name has none)."""

    widget = NameValueRows

    def to_python(self, value: Any) -> Any:
        if value in (None, "", []):
            return {}
        if isinstance(value, dict):
            return value
        if isinstance(value, str):  # an older post: JSON
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValidationError(INVALID_JSON, code="invalid") from None
        result: dict[str, str] = {}
        for key, item in value:
            if not key:
                raise ValidationError("Enter a name for each value.", code="invalid")
            if key in result:
                raise ValidationError(f"'{key}' is given twice.", code="invalid")
            result[key] = item or MASK
        return result

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            value = self.to_python(data)
        except ValidationError:
            return True
        if not isinstance(value, dict):
            return True
        initial = initial or {}
        return set(value) != set(initial) or any(item != MASK for item in value.values())


# tool filters: the server's tools to tick


class ToolChoices(forms.Widget):
    """A tick for "all tools, including future ones", one per tool the server offered at
    its last check, and a box for other names (a server never checked)."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.offered: list[dict[str, Any]] | None = None  # None: never discovered

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
        note = (
            "The server has not been checked yet: check it to list its tools, or type names."
            if self.offered is None
            else "Other tool names:"
        )
        warning = (
            format_html('<p class="wb-warning errornote">{}</p>', filter_warning(listed_unknown))
            if listed_unknown
            else ""
        )
        return format_html(
            '{}<div class="wb-tools" data-name="{}">{}<p class="wb-other">{} '
            '<input type="text" name="{}__other" value="{}" size="40" aria-label="other tool '
            'names"></p><input type="hidden" name="{}__present" value="1"></div>',
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
