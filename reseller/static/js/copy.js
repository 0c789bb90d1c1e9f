// Copy buttons: <button data-copy-target="ID" data-copied-label="Copied" hidden>. A separate
// file because the Content Security Policy forbids inline scripts; the button stays hidden
// where this script does not run, and the text field can still be selected by hand.
(function () {
  "use strict";

  function select(field) {
    field.focus();
    field.select();
    if (field.setSelectionRange) field.setSelectionRange(0, field.value.length);
  }

  function copy(field) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(field.value);
    }
    select(field);
    return document.execCommand("copy") ? Promise.resolve() : Promise.reject();
  }

  document.querySelectorAll("[data-copy-target]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy-target"));
    if (!field) return;
    var label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function () {
      copy(field).then(
        function () {
          button.textContent = button.getAttribute("data-copied-label") || label;
          window.setTimeout(function () { button.textContent = label; }, 2500);
        },
        function () { select(field); }
      );
    });
  });
})();
