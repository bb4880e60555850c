// The Tool Forge screen's only script (progressive enhancement: every page works without it).
// A confirm button stays disabled until its checkbox is ticked; the server checks the box too.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-needs]").forEach(function (button) {
    var box = document.getElementById(button.getAttribute("data-needs"));
    if (!box) return;
    var sync = function () { button.disabled = !box.checked; };
    box.addEventListener("change", sync);
    sync();
  });
});
