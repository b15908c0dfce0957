// Server statuses that say "checking…" (toolboxes/admin/server_checks.py): each asks its
// data-status-url every POLL_MS until the check ends or its data-deadline (seconds) passes,
// shows the elapsed time meanwhile, then the result in place. A status with a
// data-result-target (the check page) also fills that element with the check's result.
// One lost answer (a dropped keep-alive connection, a request that never returns) is asked
// again: each request is bounded by ASK_TIMEOUT_MS, and only MAX_MISSES in a row say that
// the admin does not answer.
(function () {
  "use strict";
  var POLL_MS = 1000;
  var ASK_TIMEOUT_MS = 10000;
  var MAX_MISSES = 3;

  function show(span, answer) {
    span.textContent = answer.text;
    span.className = "wb-status wb-" + answer.state;
  }

  function askOnce(url) {
    var controller = new AbortController();
    var timer = window.setTimeout(function () { controller.abort(); }, ASK_TIMEOUT_MS);
    return fetch(url, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      signal: controller.signal
    })
      .then(function (response) {
        return response.ok ? response.json() : Promise.reject(new Error(response.status));
      })
      .finally(function () { window.clearTimeout(timer); });
  }

  function follow(span) {
    var target = span.getAttribute("data-result-target");
    var url = span.getAttribute("data-status-url") + (target ? "?result=1" : "");
    var deadline = Date.now() + 1000 * Number(span.getAttribute("data-deadline") || 60);
    var misses = 0;

    function ask() {
      askOnce(url)
        .then(function (answer) {
          misses = 0;
          show(span, answer);
          if (answer.checking && Date.now() < deadline) {
            window.setTimeout(ask, POLL_MS);
          } else if (target && answer.result_html !== undefined) {
            document.getElementById(target).innerHTML = answer.result_html;
          }
        })
        .catch(function () {
          misses += 1;
          if (misses < MAX_MISSES && Date.now() < deadline) {
            window.setTimeout(ask, POLL_MS);
          } else {
            span.textContent = "checking… (no answer from the admin: reload the page)";
          }
        });
    }

    window.setTimeout(ask, POLL_MS);
  }

  function start() {
    document.querySelectorAll(".wb-status.wb-checking[data-status-url]").forEach(follow);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
