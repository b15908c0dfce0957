/* The server form: fields by transport, rows added to env and headers, "all tools" ticks.
   Without JavaScript every field shows and two empty rows are there to fill. */
"use strict";
(function () {
  function scopeOf(element) {
    return element.closest(".inline-related") || element.closest("form") || document;
  }

  function showByTransport(select) {
    var stdio = select.value === "stdio";
    scopeOf(select).querySelectorAll("fieldset.wb-stdio").forEach(function (fieldset) {
      fieldset.hidden = !stdio;
    });
    scopeOf(select).querySelectorAll("fieldset.wb-remote").forEach(function (fieldset) {
      fieldset.hidden = stdio;
    });
  }

  function markEverything(box) {
    box.closest(".wb-tools").classList.toggle("wb-everything", box.checked);
  }

  function addRow(button) {
    var widget = button.closest(".wb-rows-widget");
    var table = widget.querySelector("table.wb-rows");
    var count = widget.querySelector("input.wb-rows-count");
    var last = table.querySelector("tbody tr:last-child");
    var row = last.cloneNode(true);
    var index = Number(count.value);
    row.querySelectorAll("input").forEach(function (input) {
      input.name = input.name.replace(/__(name|value|remove)__\d+$/, "__$1__" + index);
      input.value = "";
      if (input.type === "password") input.placeholder = "value";
    });
    row.querySelectorAll("label").forEach(function (label) { label.remove(); });
    table.querySelector("tbody").appendChild(row);
    count.value = String(index + 1);
  }

  function setUp(root) {
    root.querySelectorAll('select[name$="transport"]').forEach(showByTransport);
    root.querySelectorAll(".wb-tools .wb-all input").forEach(markEverything);
  }

  /* On a server's own add page, picking a catalog entry reloads the page with that entry
     (`?catalog_entry=`), keeping the toolbox and name typed so far: the entry's parameters
     are fields of the form only once it is known. */
  function reloadWithEntry(select) {
    var form = select.closest("form");
    var params = new URLSearchParams();
    ["toolbox", "name"].forEach(function (name) {
      var field = form.querySelector('[name="' + name + '"]');
      if (field && field.value) params.set(name, field.value);
    });
    if (select.value) params.set("catalog_entry", select.value);
    window.location.search = params.toString();
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches('select[name="catalog_entry"]') &&
        /\/add\/$/.test(window.location.pathname)) {
      reloadWithEntry(event.target);
    }
    if (event.target.matches('select[name$="transport"]')) showByTransport(event.target);
    if (event.target.matches(".wb-tools .wb-all input")) markEverything(event.target);
  });
  document.addEventListener("click", function (event) {
    if (event.target.matches("button.wb-add-row")) {
      event.preventDefault();
      addRow(event.target);
    }
  });
  document.addEventListener("formset:added", function (event) { setUp(event.target); });
  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
})();
