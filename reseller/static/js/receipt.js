// Follows a payment's page live: polls its status.json until the payment and every recharge
// are final.
(function () {
  "use strict";
  const receipt = document.getElementById("receipt");
  if (!receipt || receipt.dataset.final === "true") {
    return;
  }
  const url = receipt.dataset.statusUrl;
  let delay = 1000;

  function paint(data) {
    const payment = document.getElementById("payment-status");
    payment.textContent = data.statusLabel;
    payment.className = "status status-" + (data.statusShown || data.status);
    data.recharges.forEach(function (recharge) {
      const row = receipt.querySelector('[data-recharge="' + recharge.id + '"]');
      if (!row) {
        return;
      }
      const badge = row.querySelector(".status");
      badge.textContent = recharge.statusLabel;
      badge.className = "status status-" + recharge.status;
      row.querySelector(".failure").textContent = recharge.failureMessage || "";
    });
  }

  async function poll() {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) {
        const data = await response.json();
        const rows = receipt.querySelectorAll("[data-recharge]").length;
        // A PIN delivered since the page was drawn: the page shows it when drawn again.
        const pinArrived = data.recharges.some(
          (r) => r.hasPin && !receipt.querySelector(`[data-recharge="${r.id}"] [data-pin]`),
        );
        if (pinArrived || data.recharges.length !== rows || data.status !== receipt.dataset.status) {
          // The recharges were created since the page was drawn, or the payment changed (a
          // card payment paid, expired or cancelled meanwhile): the page says it anew.
          window.location.reload();
          return;
        }
        paint(data);
        if (data.final) {
          receipt.dataset.final = "true";
          const note = document.getElementById("live-note");
          if (note) {
            note.textContent = "";
          }
          return;
        }
      }
    } catch (e) {
      // network blip: try again a little later
    }
    delay = Math.min(delay * 1.5, 10000);
    window.setTimeout(poll, delay);
  }
  window.setTimeout(poll, delay);
})();

// A delivered PIN's "Copy" button (shown where the browser may write to the clipboard): it
// copies the whole code, without the gaps between its groups.
(function () {
  "use strict";
  if (!navigator.clipboard || !window.isSecureContext) {
    return;
  }
  document.querySelectorAll(".pin-copy").forEach(function (button) {
    const label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", async function () {
      try {
        await navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = button.dataset.copied;
        window.setTimeout(function () {
          button.textContent = label;
        }, 2000);
      } catch (e) {
        // refused: the code stays selectable by hand
      }
    });
  });
})();
