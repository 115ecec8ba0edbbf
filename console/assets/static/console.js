// goxpdl console: progressive enhancement only. Every form works without
// this file; with it, a click on an activity of a diagram picks it in the
// page's activity fields (the jump and rollback target).
(function () {
  "use strict";
  document.addEventListener("click", function (ev) {
    var node = ev.target instanceof Element ? ev.target.closest("figure.diagram [data-activity]") : null;
    if (!node) {
      return;
    }
    var id = node.getAttribute("data-activity");
    var picked = false;
    document.querySelectorAll('select[data-pick="activity"]').forEach(function (sel) {
      for (var i = 0; i < sel.options.length; i++) {
        if (sel.options[i].value === id) {
          sel.value = id;
          sel.dispatchEvent(new Event("change", { bubbles: true }));
          picked = true;
          return;
        }
      }
    });
    if (picked) {
      document.querySelectorAll("figure.diagram [data-activity].picked").forEach(function (n) {
        n.classList.remove("picked");
      });
      node.classList.add("picked");
    }
  });
})();
