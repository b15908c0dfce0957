// Copy buttons: <button data-copy-target="ID"> copies the text (or value) of element ID.
// navigator.clipboard needs a secure context (HTTPS or localhost); elsewhere the text is
// selected and copied the old way. The button says what happened.
(function () {
  "use strict";

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
    document.body.removeChild(area);
    return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return fallbackCopy(text);
      });
    }
    return fallbackCopy(text);
  }

  function say(button, text) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = text;
    window.setTimeout(function () { button.textContent = label; }, 2000);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target]");
    if (!button) {
      return;
    }
    event.preventDefault();
    var source = document.getElementById(button.getAttribute("data-copy-target"));
    if (!source) {
      return;
    }
    var text = "value" in source && source.tagName !== "PRE" ? source.value : source.textContent;
    copy(text).then(
      function () { say(button, "Copied"); },
      function () { say(button, "Select the text and copy it"); }
    );
  });

  // <input data-select-on-focus>: its whole value is selected when it gets focus (here,
  // not in an inline onfocus: the Content-Security-Policy runs no inline script).
  document.addEventListener("focusin", function (event) {
    if (event.target.matches && event.target.matches("[data-select-on-focus]")) {
      event.target.select();
    }
  });
})();
