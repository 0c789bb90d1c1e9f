// Card payments with Stripe.js (decisions.md section 4), for the checkout and wallet pages and
// for finishing a payment from its own page (docs/payments.md).
// prepare (our API) -> confirmCardSetup (Stripe) -> checkout (our API, which creates and
// confirms the PaymentIntent) -> confirmCardPayment on 3-D Secure -> checkout again.
(function () {
  "use strict";
  const form = document.getElementById("card-form");
  if (!form || typeof Stripe === "undefined") {
    return;
  }
  const d = form.dataset;
  const idField = d.kind === "topup" ? "topupId" : "paymentId";
  const stripe = Stripe(d.publishableKey);
  const mount = document.getElementById("card-element");
  // A payment waiting for the bank (3-D Secure) is finished without a card: checkout answers
  // with the bank's check again. Any other takes a card.
  const waiting = d.waiting === "true";
  let card = null;
  if (mount) {
    card = stripe.elements().create("card");
    card.mount(mount);
  }

  const button = document.getElementById("pay-button");
  const errorBox = document.getElementById("card-error");
  const statusBox = document.getElementById("card-status");
  let currentId = d.paymentId || null; // our payment (or top-up) id once prepared
  let needsSetup = true; // a SetupIntent takes one card: a new attempt needs a new one
  let setupSecret = null;
  let receiptUrl = null; // a guest's receipt link (the prepare and checkout answers carry it)
  // On a payment's own page a refusal that changes what the payment is (declined, expired)
  // reloads the page, which then says what it is and what can be done.
  const onItsPage = Boolean(d.paymentId);

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept-Language": document.documentElement.lang || "en",
        "X-CSRFToken": csrfToken(),
      },
      body: JSON.stringify(body),
    });
    let data = {};
    try {
      data = await response.json();
    } catch (e) {
      data = {};
    }
    return { status: response.status, body: data };
  }

  function busy(on) {
    button.disabled = on;
    statusBox.hidden = !on;
  }

  function fail(message) {
    busy(false);
    errorBox.textContent = message || d.msgFailed;
    errorBox.hidden = false;
  }

  // The amount as the API reads it (20.50): typed as the page's language writes it (20,50 in
  // Spanish and French, where a point is read too), spaces and thousands separators left out.
  function apiAmount(input) {
    const text = input.value.trim().replace(/[\s\u00a0\u202f]/g, "");
    if (input.dataset.decimalSeparator === ",") {
      return text.replace(",", ".");
    }
    return text.replace(/,/g, "");
  }

  function prepareBody() {
    const guest = d.kind === "guest" ? { email: form.elements.email.value } : {};
    if (currentId) {
      return Object.assign({ [idField]: currentId }, guest);
    }
    if (d.kind === "topup") {
      return { amount: apiAmount(form.elements.amount) };
    }
    const body = d.kind === "guest" ? guest : { sessionId: d.sessionId };
    const choice = form.elements.when_promotion_scheduled;
    if (choice && choice.value) {
      body.whenPromotionScheduled = choice.value; // "wait" or "sendNow" (contract §5)
    }
    return body;
  }

  function problem(result) {
    if (result.body && result.body.code === "quote_expired") {
      currentId = null;
      needsSetup = true;
      return d.msgExpired;
    }
    if (result.body && result.body.code === "card_limit_reached") {
      // A card purchase limit (docs/fraud.md): the API's detail says which, and when it frees.
      return [d.msgLimit, result.body.detail].filter(Boolean).join(" ");
    }
    if (result.body && result.body.code === "payment_method_required") {
      return d.msgFailed; // the API's wording is for integrators: enter the card again
    }
    if (result.body && result.body.code === "validation_error" && result.body.errors) {
      return result.body.errors.map(function (e) { return e.message; }).join(" ");
    }
    return (result.body && result.body.detail) || d.msgFailed;
  }

  function done() {
    if (receiptUrl) {
      return window.location.assign(receiptUrl);
    }
    window.location.assign(d.successUrl.replace("PAYMENT_ID", currentId));
  }

  async function pay() {
    errorBox.hidden = true;
    busy(true);
    let result;
    if (waiting) {
      result = await post(d.checkoutUrl, { [idField]: currentId });
    } else {
      if (needsSetup) {
        const prepared = await post(d.prepareUrl, prepareBody());
        if (prepared.status !== 201) {
          return refused(prepared);
        }
        currentId = prepared.body[idField];
        setupSecret = prepared.body.setupClientSecret;
        receiptUrl = prepared.body.receiptUrl || null;
        needsSetup = false;
      }
      const setup = await stripe.confirmCardSetup(setupSecret, { payment_method: { card: card } });
      needsSetup = true;
      if (setup.error) {
        return fail((setup.error && setup.error.message) || d.msgAuth);
      }
      result = await post(d.checkoutUrl, { [idField]: currentId });
    }
    if (result.status === 202 && result.body.status === "requires_action") {
      await stripe.confirmCardPayment(result.body.clientSecret); // the server reads the outcome
      result = await post(d.checkoutUrl, { [idField]: currentId });
    }
    receiptUrl = (result.body && result.body.receiptUrl) || receiptUrl;
    if (result.status === 200 || result.status === 202) {
      return done(); // the receipt shows a payment still processing, too
    }
    return refused(result);
  }

  const CHANGES_THE_PAYMENT = [
    "card_declined",
    "card_authentication_failed",
    "quote_expired",
    "payment_not_payable",
  ];

  function refused(result) {
    if (onItsPage && CHANGES_THE_PAYMENT.indexOf(result.body && result.body.code) !== -1) {
      return window.location.reload();
    }
    return fail(problem(result));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!form.reportValidity()) {
      return; // a choice the page asks for (send now or wait for the promotion) is missing
    }
    pay().catch(function () {
      fail(d.msgFailed);
    });
  });

  // "Cancel payment" on a payment's own page: nothing is charged, the page then says so.
  const cancel = document.getElementById("cancel-payment");
  if (cancel && d.cancelUrl) {
    cancel.addEventListener("click", async function () {
      errorBox.hidden = true;
      cancel.disabled = true;
      try {
        const result = await post(d.cancelUrl, { [idField]: currentId });
        if (result.status === 200) {
          return window.location.reload();
        }
        fail(problem(result));
      } catch (e) {
        fail(d.msgFailed);
      }
      cancel.disabled = false;
    });
  }
})();
