/* The server form's two ways to a server: a catalog entry (its parameters and what it
   runs shown once one is chosen) or, for operators, a server of one's own (its groups shown
   while no entry is chosen). Also grows an arguments box with its lines. Without
   JavaScript every group shows. */
"use strict";
(function () {
  function scopeOf(element) {
    return element.closest(".inline-related") || element.closest("form") || document.body;
  }

  function arrange(select) {
    var scope = scopeOf(select);
    var fromCatalog = Boolean(select.value);
    scope.classList.toggle("wb-from-catalog", fromCatalog);
    scope.classList.toggle("wb-own-server", !fromCatalog);
  }

  function fit(box) {
    box.style.height = "auto";
    box.style.height = box.scrollHeight + box.offsetHeight - box.clientHeight + "px";
  }

  function setUp(root) {
    root.querySelectorAll('select[name$="catalog_entry"]').forEach(arrange);
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches('select[name$="catalog_entry"]')) arrange(event.target);
  });
  document.addEventListener("input", function (event) {
    if (event.target.matches("textarea.wb-lines")) fit(event.target);
  });
  document.addEventListener("formset:added", function (event) { setUp(event.target); });
  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
})();
