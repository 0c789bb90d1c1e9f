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
    card = stripe.elements({ locale: document.documentElement.lang || "auto" }).create("card");
    card.mount(mount);
  }
  const fields = fakeCardFields(mount);
  const msg = mount ? mount.dataset : {};

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

  // What the card's processor refused, in the buyer's words and language, naming the field:
  // Stripe.js's error codes (and localstripe's, which often has only "Bad request").
  function cardProblem(error) {
    const code = (error && (error.code || error.decline_code)) || "";
    const param = (error && error.param) || "";
    if (/authentication_failure$/.test(code)) {
      return d.msgAuth;
    }
    if (code === "expired_card" || /_past$/.test(code)) {
      return msg.msgExpiredCard;
    }
    if (/expiry|exp_(month|year)/.test(code) || /exp_(month|year)/.test(param)) {
      return msg.msgExpiry;
    }
    if (/cvc/.test(code) || /cvc/.test(param)) {
      return msg.msgCvc;
    }
    if (/zip|postal/.test(code) || /postal/.test(param)) {
      return msg.msgPostal;
    }
    if (/number/.test(code) || /number/.test(param)) {
      return msg.msgNumber;
    }
    if (code === "card_declined" || code === "insufficient_funds") {
      return msg.msgDeclined;
    }
    if (code === "processing_error") {
      return msg.msgProcessing;
    }
    return msg.msgRefused || d.msgFailed;
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
      const invalid = fields ? fields.check() : null;
      if (invalid) {
        return fail(invalid);
      }
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
        return fail(cardProblem(setup.error));
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
  // The button is served disabled: a click before this script ran would submit the form to
  // the page itself (a reload that pays nothing). It takes clicks from here on.
  button.disabled = false;

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
    cancel.disabled = false; // served disabled, as the pay button
  }

  // Test mode only: localstripe's card Element is five plain inputs (number, exp_month,
  // exp_year, cvc, postal_code) with none of the real one's checks, and it sends "20" + the
  // year typed: a four-digit year (12 / 2030) failed with "Bad request". Here the month and
  // year are read as MM/YY or MM/YYYY (also typed whole, "12/2030", in the month), the number
  // without its spaces, and a field that cannot be right is named before anything is sent.
  // The real Element (an iframe) is left alone: Stripe checks its own fields.
  function fakeCardFields(container) {
    const input = function (name) {
      return container && container.querySelector("input[placeholder=" + name + "]");
    };
    const number = input("number");
    const month = input("exp_month");
    const year = input("exp_year");
    const cvc = input("cvc");
    if (!number || !month || !year || !cvc) {
      return null;
    }
    month.setAttribute("inputmode", "numeric");
    year.setAttribute("inputmode", "numeric");
    number.setAttribute("inputmode", "numeric");
    cvc.setAttribute("inputmode", "numeric");
    let passing = false; // our own input events go through to the Element unchanged

    function digits(value) {
      return value.replace(/\D/g, "");
    }

    function set(field, value) {
      field.value = value;
      passing = true;
      field.dispatchEvent(new Event("input", { bubbles: true }));
      passing = false;
    }

    // Before localstripe's own handler (capture, on the container): it moves to the CVC as soon
    // as the year has two digits, so "2030" would put "30" in the CVC.
    container.addEventListener(
      "input",
      function (event) {
        if (passing) {
          return;
        }
        const target = event.target;
        if (target === number) {
          const clean = digits(number.value).slice(0, 16);
          if (clean !== number.value) {
            number.value = clean;
          }
        } else if (target === month) {
          const whole = month.value.match(/^\s*(\d{1,2})\s*[/\-. ]\s*(\d{2}|\d{4})\s*$/) ||
            month.value.replace(/\s/g, "").match(/^(\d{2})(\d{2}|\d{4})$/);
          if (whole) {
            event.stopImmediatePropagation();
            set(month, whole[1]);
            set(year, whole[2].slice(-2));
            cvc.focus();
          }
        } else if (target === year) {
          const typed = digits(year.value);
          if (typed.length === 4 && typed.slice(0, 2) === "20") {
            year.value = typed.slice(2); // 2030 -> 30, then on to the CVC
          } else if (typed === "20" || typed.length === 3) {
            event.stopImmediatePropagation(); // maybe the start of 20xx: wait for the rest
            year.value = typed;
          } else if (typed !== year.value) {
            year.value = typed;
          }
        }
      },
      true
    );

    function invalid(field, message) {
      field.setAttribute("aria-invalid", "true");
      field.focus();
      return message;
    }

    return {
      // The first field that cannot be right, named in the page's language; else null.
      check: function () {
        [number, month, year, cvc].forEach(function (field) {
          field.removeAttribute("aria-invalid");
        });
        if (digits(number.value).length !== 16) {
          return invalid(number, msg.msgNumber);
        }
        const m = parseInt(digits(month.value), 10);
        let y = digits(year.value);
        if (y.length === 4 && y.slice(0, 2) === "20") {
          y = y.slice(2);
        }
        if (!(m >= 1 && m <= 12)) {
          return invalid(month, msg.msgExpiry);
        }
        if (y.length !== 2) {
          return invalid(year, msg.msgExpiry);
        }
        const now = new Date();
        const fullYear = 2000 + parseInt(y, 10);
        if (fullYear < now.getFullYear() ||
            (fullYear === now.getFullYear() && m < now.getMonth() + 1)) {
          return invalid(year, msg.msgExpiredCard);
        }
        if (!/^\d{3}$/.test(cvc.value.trim())) {
          return invalid(cvc, msg.msgCvc);
        }
        // What the Element sends is what the fields show now.
        set(number, digits(number.value));
        set(month, String(m).padStart(2, "0"));
        set(year, y);
        set(cvc, cvc.value.trim());
        return null;
      },
    };
  }
})();
