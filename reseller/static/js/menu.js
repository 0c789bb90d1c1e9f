// On a phone the header is one line: the brand and a "Menu" button that shows the links and
// the language picker. Without JavaScript everything stays visible.
(function () {
  var header = document.querySelector(".topbar");
  var button = header && header.querySelector(".menu-toggle");
  if (!button) return;
  header.classList.add("has-menu");
  button.hidden = false;
  button.addEventListener("click", function () {
    var open = header.classList.toggle("open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
