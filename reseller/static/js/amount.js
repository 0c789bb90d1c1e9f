// A range product's amount field (catalog/_add_to_cart.html): the price of the amount typed,
// as the server computes it (orders.views.product_price), asked once the typing pauses, and
// preset buttons for common amounts. Without this script the form still posts the amount and
// the server says what is wrong with it; the presets stay hidden.
(function () {
  "use strict";

  var PAUSE = 250; // ms after the last keystroke

  document.querySelectorAll(".amount-field[data-price-url]").forEach(function (field) {
    var url = field.getAttribute("data-price-url");
    var input = field.querySelector("input[name=local_amount]");
    var price = field.querySelector(".amount-price");
    var error = field.querySelector(".error");
    var presets = field.querySelectorAll(".preset");
    var timer = null;
    var asking = null;

    function show(ok, text) {
      price.textContent = ok ? text : "";
      error.textContent = ok ? "" : text;
      error.hidden = ok || !text;
      if (ok || !text) input.removeAttribute("aria-invalid");
      else input.setAttribute("aria-invalid", "true");
    }

    function pressed() {
      presets.forEach(function (button) {
        var same = input.value !== "" && Number(button.getAttribute("data-amount")) === Number(input.value);
        button.setAttribute("aria-pressed", same ? "true" : "false");
      });
    }

    function ask() {
      if (asking) asking.abort();
      asking = null;
      var value = input.value.trim();
      if (!value) {
        show(true, "");
        return;
      }
      var controller = new AbortController();
      asking = controller;
      fetch(url + "?amount=" + encodeURIComponent(value), {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        signal: controller.signal,
      })
        .then(function (response) {
          return response.json().then(function (body) {
            return { ok: response.ok, body: body };
          });
        })
        .then(function (answer) {
          if (asking === controller) show(answer.ok, answer.body.message || "");
        })
        .catch(function (problem) {
          if (problem.name !== "AbortError" && asking === controller) show(true, "");
        });
    }

    input.addEventListener("input", function () {
      pressed();
      window.clearTimeout(timer);
      timer = window.setTimeout(ask, PAUSE);
    });

    presets.forEach(function (button) {
      button.addEventListener("click", function () {
        input.value = button.getAttribute("data-amount");
        pressed();
        window.clearTimeout(timer);
        ask();
      });
    });
    var group = field.querySelector(".presets");
    if (group) group.hidden = false;
    pressed();
  });
})();
