"""Server form fields an admin can read: args one per line, env and headers as name/value
rows (values write-only), a catalog entry's parameters one input each (tool filters:
`tool_filters`).

Each field also reads the older single-value JSON post (`args=["-y", "pkg"]`,
`env={"A": "b"}`, `tool_filters=["*"]`), so scripts and pasted client configurations keep
working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from kernel.masking import MASK
from toolboxes.models import CatalogParameter

MAX_ROWS = 200
EXTRA_ROWS = 1  # and a button for more
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


LINES_COLUMNS = 80
LINES_MAX_ROWS = 20


class LinesInput(forms.Textarea):
    """A box as tall as its lines (a long one counted as wrapped), and one line more to type
    the next: a command's arguments show whole, a repository's path included."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"cols": LINES_COLUMNS, "class": "wb-lines", **(attrs or {})})

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> Any:
        context = super().get_context(name, value, attrs)
        text = str(context["widget"]["value"] or "")
        shown = sum(-(-len(line) // LINES_COLUMNS) or 1 for line in text.splitlines())
        context["widget"]["attrs"]["rows"] = min(max(shown + 1, 2), LINES_MAX_ROWS)
        return context


class LinesField(forms.Field):
    """A list of strings, typed one per line (blank lines are skipped)."""

    widget = LinesInput

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
        # Headed once there are rows to tell apart; empty ones say it in their placeholders.
        head = (
            format_html(
                "<thead><tr><th>{}</th><th>value</th><th></th></tr></thead>", self.name_label
            )
            if any(names)
            else ""
        )
        return format_html(
            '<div class="wb-rows-widget"><table class="wb-rows">{}<tbody>{}</tbody></table>'
            '<input type="hidden" name="{}__rows" value="{}" class="wb-rows-count">'
            '<button type="button" class="button wb-add-row">Add a row</button></div>',
            head,
            rows,
            name,
            len(names),
        )

    def _row(self, name: str, index: int, key: str) -> SafeString:
        hint = "stored: leave empty to keep" if key and key in self.stored else "value"
        remove = (
            format_html(
                '<label><input type="checkbox" name="{}__remove__{}"> remove</label>', name, index
            )
            if key
            else ""
        )
        return format_html(
            '<tr><td><input type="text" name="{}__name__{}" value="{}" size="24" '
            'aria-label="{}" placeholder="{}"></td><td><input type="password" '
            'name="{}__value__{}" autocomplete="new-password" size="32" placeholder="{}" '
            'aria-label="value"></td><td>{}</td></tr>',
            name,
            index,
            key,
            self.name_label,
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


# a catalog entry's parameters: one input each


class ParametersWidget(forms.Widget):
    """One input per parameter of the chosen catalog entry; secrets are password inputs that
    never render their stored value (left empty, the stored value is kept)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parameters: list[CatalogParameter] = []
        self.stored_secrets: set[str] = set()
        self.entry_chosen = False  # set by the form

    def value_from_datadict(self, data: Any, files: Any, name: str) -> dict[str, str]:
        return {p.name: data.get(f"{name}__{p.name}", "") for p in self.parameters}

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        # The server's add page renders any entry's parameters (`?catalog_entry=`):
        # server_source.js takes them from there when another entry is picked.
        source = reverse("admin:toolboxes_server_add")
        return format_html(
            '<div class="wb-parameters-widget" data-source="{}">{}</div>',
            source,
            self._inputs(name, value),
        )

    def _inputs(self, name: str, value: Any) -> SafeString:
        if not self.parameters:
            return format_html(
                '<p class="wb-no-parameters">{}</p>',
                "The entry has no parameters."
                if self.entry_chosen
                else "Save (or “Save and continue editing”) to fill in the parameters of the "
                "entry chosen.",
            )
        value = value if isinstance(value, dict) else {}
        rows = [
            self._row(name, parameter, value.get(parameter.name, ""))
            for parameter in self.parameters
        ]
        return format_html(
            '<table class="wb-parameters">{}</table>',
            format_html_join("", "{}", ((row,) for row in rows)),
        )

    def _row(self, name: str, parameter: CatalogParameter, value: str) -> SafeString:
        field_name = f"{name}__{parameter.name}"
        if parameter.secret:
            hint = "stored: leave empty to keep" if parameter.name in self.stored_secrets else ""
            control = format_html(
                '<input type="password" name="{}" id="id_{}" autocomplete="new-password" '
                'placeholder="{}" size="40">',
                field_name,
                field_name,
                hint,
            )
        elif parameter.choices:
            options = format_html_join(
                "",
                '<option value="{}"{}>{}</option>',
                (
                    (choice, " selected" if choice == value else "", choice or "(default)")
                    for choice in ["", *parameter.choices]
                ),
            )
            control = format_html(
                '<select name="{}" id="id_{}">{}</select>', field_name, field_name, options
            )
        else:
            control = format_html(
                '<input type="text" name="{}" id="id_{}" value="{}" size="40">',
                field_name,
                field_name,
                value,
            )
        notes = [parameter.description]
        if parameter.required:
            notes.append("required")
        if parameter.secret:
            notes.append("secret")
        if parameter.default and not parameter.secret:
            notes.append(f"default: {parameter.default}")
        return format_html(
            '<tr><th><label for="id_{}">{}</label></th><td>{}<div class="help">{}</div></td></tr>',
            field_name,
            parameter.name,
            control,
            " · ".join(note for note in notes if note),
        )
