// goxpdl console: progressive enhancement only. Every form works without
// this file; with it, a click on an activity of a diagram picks it in the
// page's activity fields (the jump and rollback target), and the activity
// picked, by a click or in the list, is marked on the diagram, also after
// htmx has redrawn the diagram.
(function () {
  "use strict";
  var pickers = 'select[data-pick="activity"]';

  // mark marks the activity id on the page's diagrams, and no other.
  function mark(id) {
    document.querySelectorAll("figure.diagram [data-activity].picked").forEach(function (n) {
      n.classList.remove("picked");
    });
    if (!id) {
      return;
    }
    document.querySelectorAll('figure.diagram [data-activity="' + CSS.escape(id) + '"]').forEach(function (n) {
      n.classList.add("picked");
    });
  }

  document.addEventListener("click", function (ev) {
    var node = ev.target instanceof Element ? ev.target.closest("figure.diagram [data-activity]") : null;
    if (!node) {
      return;
    }
    var id = node.getAttribute("data-activity");
    document.querySelectorAll(pickers).forEach(function (sel) {
      for (var i = 0; i < sel.options.length; i++) {
        if (sel.options[i].value === id) {
          sel.value = id;
          sel.dispatchEvent(new Event("change", { bubbles: true }));
          return;
        }
      }
    });
  });

  document.addEventListener("change", function (ev) {
    if (ev.target instanceof Element && ev.target.matches(pickers)) {
      mark(ev.target.value);
    }
  });

  // htmx replaces the live part of a page (the diagram with it) every few
  // seconds: mark the picked activity on the new drawing.
  document.addEventListener("htmx:afterSwap", function () {
    var sel = document.querySelector(pickers);
    if (sel) {
      mark(sel.value);
    }
  });
})();
