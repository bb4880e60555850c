// The Tool Forge screen's only script (progressive enhancement: every page works without it).
// - A confirm button stays disabled until its checkbox is ticked; the server checks the box too.
// - A graph's zoom buttons (shown only when this script runs): the graph scrolls inside its
//   frame whatever its size; these scale it, down to the whole flow in the frame.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-needs]").forEach(function (button) {
    var box = document.getElementById(button.getAttribute("data-needs"));
    if (!box) return;
    var sync = function () { button.disabled = !box.checked; };
    box.addEventListener("change", sync);
    sync();
  });
  document.querySelectorAll("figure.graph").forEach(function (figure) {
    var tools = figure.querySelector(".graph-tools");
    var frame = figure.querySelector(".graph-frame");
    var svg = frame && frame.querySelector("svg");
    if (!tools || !svg) return;
    var w = parseFloat(svg.getAttribute("data-width"));
    var h = parseFloat(svg.getAttribute("data-height"));
    var scale = 1;
    var apply = function () {
      svg.setAttribute("width", String(Math.round(w * scale)));
      svg.setAttribute("height", String(Math.round(h * scale)));
      figure.setAttribute("data-scale", scale.toFixed(3));
    };
    var fit = function () {
      var maxH = parseFloat(window.getComputedStyle(frame).maxHeight) || frame.clientHeight;
      return Math.min(1, (frame.clientWidth - 4) / w, (maxH - 4) / h);
    };
    tools.hidden = false;
    tools.querySelectorAll("button[data-graph-zoom]").forEach(function (button) {
      button.addEventListener("click", function () {
        var how = button.getAttribute("data-graph-zoom");
        if (how === "fit") scale = fit();
        else if (how === "in") scale = Math.min(2, scale * 1.25);
        else if (how === "out") scale = Math.max(0.05, scale / 1.25);
        else scale = 1;
        apply();
      });
    });
  });
});
