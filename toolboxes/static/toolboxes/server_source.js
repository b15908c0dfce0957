/* The server form's two ways to a server: a catalog entry (its parameters shown as soon as
   one is picked, and what it runs once saved) or, for operators, a server of one's own (its
   groups shown while no entry is chosen). Also grows an arguments box with its lines.
   Without JavaScript every group shows, and a newly picked entry's parameters come with
   a save. */
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

  /* Another entry picked (a toolbox's servers, a server's own change page): its parameters
     come from the server's add page, which renders any entry's (`?catalog_entry=`), named
     for this form. (On the add page itself, server_form.js reloads the page instead.) */
  function loadParameters(select) {
    var widget = scopeOf(select).querySelector(".wb-parameters-widget");
    var onAddPage = select.name === "catalog_entry" && /\/add\/$/.test(window.location.pathname);
    if (!widget || !select.value || onAddPage) return;
    var chosen = select.value;
    scopeOf(select).classList.add("wb-entry-changed");  // what it runs: said once saved
    var prefix = select.name.slice(0, -"catalog_entry".length);
    var url = widget.dataset.source + "?catalog_entry=" + encodeURIComponent(chosen);
    widget.setAttribute("aria-busy", "true");
    fetch(url, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.text();
      })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        var fetched = page.querySelector(".wb-parameters-widget");
        if (!fetched) throw new Error("no parameters");
        if (select.value !== chosen) return;  // picked again meanwhile
        fetched.querySelectorAll("[name]").forEach(function (input) {
          input.name = prefix + input.name;
        });
        fetched.querySelectorAll("[id]").forEach(function (input) {
          input.id = "id_" + prefix + input.id.replace(/^id_/, "");
        });
        fetched.querySelectorAll("label[for]").forEach(function (label) {
          label.htmlFor = "id_" + prefix + label.htmlFor.replace(/^id_/, "");
        });
        widget.replaceChildren.apply(widget, Array.from(fetched.childNodes));
      })
      .catch(function () {
        widget.textContent = "The entry's parameters could not be loaded: save to fill them in.";
      })
      .finally(function () { widget.removeAttribute("aria-busy"); });
  }

  function fit(box) {
    box.style.height = "auto";
    box.style.height = box.scrollHeight + box.offsetHeight - box.clientHeight + "px";
  }

  function setUp(root) {
    root.querySelectorAll('select[name$="catalog_entry"]').forEach(arrange);
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches('select[name$="catalog_entry"]')) {
      arrange(event.target);
      loadParameters(event.target);
    }
  });
  document.addEventListener("input", function (event) {
    if (event.target.matches("textarea.wb-lines")) fit(event.target);
  });
  document.addEventListener("formset:added", function (event) { setUp(event.target); });
  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
})();
