// Runs before anything else on the page: every error is counted into body[data-errors] and shown
// in #errors, so both a reader and a headless check (tests/browser/check_html.sh) see a broken
// report instead of a silently blank chart.
(function () {
  "use strict";
  var count = 0;
  document.body.dataset.errors = "0";
  function fail(message) {
    count += 1;
    document.body.dataset.errors = String(count);
    var pre = document.getElementById("errors");
    if (pre) {
      pre.hidden = false;
      pre.textContent += message + "\n";
    }
  }
  window.loadhostFail = fail;
  window.onerror = function (message, source, line, column, error) {
    fail((error && error.stack) || message + " (" + source + ":" + line + ":" + column + ")");
  };
  // Chromium logs console.error at the same level as console.log, so count it here instead.
  var consoleError = console.error;
  console.error = function () {
    fail("console.error: " + Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("unhandledrejection", function (event) {
    fail("unhandled rejection: " + ((event.reason && event.reason.stack) || event.reason));
  });
})();
