// SPDX-License-Identifier: MIT
// The idem demo page: one payment form, and a log of every answer with
// its status, headers and body.  Plain JavaScript, no library, talking to
// the API on this page's own origin.
//
// "Lose the response" must drop the request after the card was charged,
// never before, or there would be nothing to recover.  So the page does
// not guess a delay: while its POST is in flight it asks the provider's
// ledger (GET /provider/stats, which the web server passes to the
// provider service) how many charges it holds, and aborts the moment
// that count grows.  The provider writes the charge to its ledger before
// it answers idem, and idem answers the page only after that, so the
// abort always lands between "charged" and "answered": the same window a
// real lost response falls into.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("pay-form");
  const account = $("account");
  const amount = $("amount");
  const currency = $("currency");
  const keyInput = $("key");
  const lose = $("lose");
  const secondTab = $("second-tab");
  const log = $("log");
  const POLL_MS = 100;
  const REASONS = {
    200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized",
    402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type",
    422: "Unprocessable Content", 429: "Too Many Requests",
    500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout",
  };
  let providerOk = true;
  let inFlight = 0;

  function accountName() {
    return account.options[account.selectedIndex].text;
  }

  function newKey() {
    const b = new Uint8Array(6);
    crypto.getRandomValues(b);
    return "order-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // The key as an RFC 8941 sf-string, the form the header expects.
  function quoted(key) {
    return '"' + key.replace(/[\\"]/g, (c) => "\\" + c) + '"';
  }

  // A JSON body with the amount as a number, as the API wants it; what
  // is not a number is sent as typed, for the server to refuse.
  function body() {
    const a = amount.value.trim();
    const num = /^-?\d+(\.\d+)?$/.test(a) ? a : JSON.stringify(a);
    return '{"amount": ' + num + ', "currency": ' +
      JSON.stringify(currency.value) + "}";
  }

  // JSON text indented for reading, its tokens untouched: a money
  // amount such as 100.00 must not be shown as the number 100.
  function pretty(text) {
    let out = "", depth = 0, inString = false;
    const nl = () => "\n" + "  ".repeat(depth);
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        out += c;
        if (c === "\\") out += text[++i];
        else if (c === '"') inString = false;
      } else if (c === '"') {
        inString = true;
        out += c;
      } else if (c === "{" || c === "[") {
        const close = c === "{" ? "}" : "]";
        if (text[i + 1] === close) { out += c + close; i++; continue; }
        depth++;
        out += c + nl();
      } else if (c === "}" || c === "]") {
        depth--;
        out += nl() + c;
      } else if (c === ",") {
        out += c + nl();
      } else if (c === ":") {
        out += ": ";
      } else if (!/\s/.test(c)) {
        out += c;
      }
    }
    return out;
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function providerCharges() {
    try {
      const r = await fetch("/provider/stats", { cache: "no-store" });
      if (!r.ok) throw new Error(r.status);
      const n = (await r.json()).charges;
      providerOk = true;
      return n;
    } catch (e) {
      providerOk = false;
      return null;
    }
  }

  async function payments() {
    try {
      const r = await fetch("/payments?limit=100", {
        headers: { Authorization: "Bearer " + account.value },
        cache: "no-store",
      });
      if (!r.ok) return null;
      return await r.json();
    } catch (e) {
      return null;
    }
  }

  async function refreshLedger() {
    const [charges, list] = await Promise.all([providerCharges(), payments()]);
    $("charges").textContent = charges === null ? "not available here" : String(charges);
    $("ledger-account").textContent = accountName();
    if (list === null) {
      $("payments").textContent = "not available";
      $("newest").textContent = "—";
    } else {
      $("payments").textContent = list.data.length + (list.has_more ? "+" : "");
      const p = list.data[0];
      $("newest").textContent = p ? p.id + " · " + p.amount.toFixed(
        p.currency === "JPY" ? 0 : 2) + " " + p.currency : "none yet";
    }
    lose.disabled = !providerOk;
    $("lose-hint").textContent = providerOk
      ? "the page aborts its request once the provider has charged"
      : "needs the provider's counts at /provider/stats (lighttpd or nginx from etc/)";
    return { charges, newest: list && list.data[0] ? list.data[0].id : null };
  }

  function updateSecondTab() {
    const p = new URLSearchParams({
      account: accountName(), amount: amount.value, currency: currency.value,
      key: keyInput.value, pay: "1",
    });
    secondTab.href = "/demo.html#" + p.toString();
  }

  // One entry of the log: the request as sent, then its answer.
  function addEntry(key, sentBody) {
    $("empty").hidden = true;
    const li = el("li", "entry pending");
    li.dataset.outcome = "pending";
    const head = el("div", "entry-head");
    const badge = el("span", "badge", "…");
    const title = el("strong", "title", "Sending…");
    const meta = el("span", "entry-meta", "key " + key + " · " +
      new Date().toLocaleTimeString());
    head.append(badge, " ", title, meta);
    const explain = el("p", "explain");
    const req = el("pre", "request");
    req.textContent = "POST /payments\nAuthorization: Bearer " + account.value +
      "   (demo key of " + accountName() + ")\nIdempotency-Key: " + quoted(key) +
      "\nContent-Type: application/json\n\n" + sentBody;
    const reqBox = el("details", "req");
    reqBox.append(el("summary", null, "Request"), req);
    const resp = el("div", "response");
    const counts = el("p", "counts");
    li.append(head, explain, reqBox, resp, counts);
    log.prepend(li);
    return { li, badge, title, explain, resp, counts };
  }

  function setOutcome(e, outcome, badge, title, text) {
    e.li.className = "entry " + outcome;
    e.li.dataset.outcome = outcome;
    e.badge.textContent = badge;
    e.title.textContent = title;
    e.explain.textContent = text;
  }

  // Status line, every header the browser lets the page read, the body,
  // and for a problem (RFC 9457) a link to the page its type names.
  function showResponse(e, r, text) {
    const reason = r.statusText || REASONS[r.status] || "";
    const table = el("table", "headers");
    const cap = el("caption", "status-line", "HTTP " + r.status + " " + reason);
    table.append(cap);
    const names = [];
    r.headers.forEach((v, k) => names.push([k, v]));
    names.sort((a, b) => a[0].localeCompare(b[0]));
    for (const [k, v] of names) {
      const tr = el("tr");
      if (k === "idempotent-replayed" || k === "retry-after" || k === "location")
        tr.className = "key-header";
      tr.append(el("th", null, k.replace(/(^|-)([a-z])/g, (m, d, c) => d + c.toUpperCase())),
        el("td", "mono", v));
      table.append(tr);
    }
    e.resp.append(table);
    let doc = null;
    try { doc = JSON.parse(text); } catch (err) { doc = null; }
    if (doc && typeof doc.type === "string" &&
        (r.headers.get("content-type") || "").startsWith("application/problem+json")) {
      const p = el("p", "problem");
      const a = el("a", null, doc.type);
      a.href = doc.type;
      a.target = "_blank";
      p.append("Problem type ", a, ": " + (doc.title || ""));
      e.resp.append(p);
    }
    e.resp.append(el("pre", "body", doc ? pretty(text) : text));
    e.li.dataset.status = String(r.status);
    return doc;
  }

  function explainAnswer(e, r, doc) {
    const replayed = (r.headers.get("idempotent-replayed") || "") === "true";
    e.li.dataset.replayed = replayed ? "true" : "false";
    if (doc && doc.id) e.li.dataset.payment = doc.id;
    const status = r.status + " " + (r.statusText || REASONS[r.status] || "");
    if (r.status === 201 && replayed) {
      setOutcome(e, "replayed", status, "The same payment, replayed",
        "The server had finished this payment before and sent its stored answer " +
        "again: same id " + doc.id + (doc.charge_id ? ", same charge " + doc.charge_id : "") +
        ", same body, Idempotent-Replayed: true. The card was not charged again.");
    } else if (r.status === 201) {
      setOutcome(e, "created", status, "Paid",
        "The provider charged the card and the server recorded payment " + doc.id +
        " before answering. Press Pay again with this key: that is a retry.");
    } else if (r.status === 409) {
      setOutcome(e, "conflict", status, "Still in flight elsewhere",
        "Another request with this key is still running, so this one did nothing. " +
        "A client waits Retry-After (" + (r.headers.get("retry-after") || "?") +
        " s) and retries with the same key to get that request's answer.");
    } else if (r.status === 422) {
      setOutcome(e, "mismatch", status, "This key belongs to another payment",
        "The key was used before with a different request (here the amount or " +
        "currency). Nothing was charged: a new payment needs a new key.");
    } else {
      setOutcome(e, "other", status, doc && doc.title ? doc.title : "Answer",
        doc && doc.detail ? doc.detail : "");
    }
  }

  // Polls until check() returns something, or until stop() says to give up.
  function waitFor(check, stop) {
    return new Promise((resolve) => {
      const tick = async () => {
        if (stop()) return resolve(null);
        const v = await check();
        if (v !== null && v !== undefined && v !== false) return resolve(v);
        setTimeout(tick, POLL_MS);
      };
      tick();
    });
  }

  async function pay(ev) {
    if (ev) ev.preventDefault();
    const key = keyInput.value;
    const sent = body();
    const e = addEntry(key, sent);
    const before = await refreshLedger();
    const ctl = new AbortController();
    const losing = lose.checked && before.charges !== null;
    let settled = false;
    let dropped = false;
    inFlight++;
    document.body.dataset.inflight = String(inFlight);
    e.li.dataset.key = key;
    setOutcome(e, "pending", "…", "In flight", losing
      ? "Waiting for the provider to charge the card; the page will then drop the request."
      : "Waiting for the answer.");
    if (losing) {
      waitFor(async () => {
        const n = await providerCharges();
        return n !== null && n > before.charges;
      }, () => settled).then((charged) => {
        if (charged && !settled) {
          dropped = true;
          ctl.abort();
        }
      });
    }
    try {
      const r = await fetch("/payments", {
        method: "POST",
        headers: {
          Authorization: "Bearer " + account.value,
          "Content-Type": "application/json",
          "Idempotency-Key": quoted(key),
        },
        body: sent,
        cache: "no-store",
        signal: ctl.signal,
      });
      const text = await r.text();
      settled = true;
      explainAnswer(e, r, showResponse(e, r, text));
      if (losing && r.status === 201 && e.li.dataset.replayed !== "true")
        e.explain.textContent += " (The answer came back before the page could " +
          "drop it: the provider answers at once here. Start it with " +
          "IDEM_PROVIDER_LATENCY_MS=3000 to see it lost.)";
    } catch (err) {
      settled = true;
      if (!dropped) {
        setOutcome(e, "other", "—", "No answer", "The request failed: " + err.message);
      } else {
        await lost(e, before);
      }
    } finally {
      inFlight--;
      document.body.dataset.inflight = String(inFlight);
    }
    const after = await refreshLedger();
    if (before.charges !== null && after.charges !== null) {
      const d = after.charges - before.charges;
      e.counts.textContent = "Charges at the provider: " + before.charges + " → " +
        after.charges + (d === 0 ? " (no new charge)" : d === 1 ? " (one charge)" :
        " (" + d + " charges, other requests included)");
      e.li.dataset.charges = String(after.charges);
    }
  }

  // The page dropped its request after the charge: it shows that the
  // server went on and recorded the payment all the same.
  async function lost(e, before) {
    setOutcome(e, "lost", "lost", "Response lost",
      "The provider charged the card, and the page dropped the connection before " +
      "the answer came: what a phone in a tunnel does. Did the server finish?");
    e.resp.append(el("p", "status-line", "No HTTP response: the request was aborted."));
    const until = Date.now() + 60000;
    const found = await waitFor(async () => {
      const list = await payments();
      const p = list && list.data[0];
      return p && p.id !== before.newest ? p : null;
    }, () => Date.now() > until);
    if (found === null) {
      e.explain.textContent += " Not recorded after a minute: retry with the " +
        "same key to learn what became of it.";
      return;
    }
    e.li.dataset.recorded = found.id;
    const retry = el("button", "retry", "Retry with the same key");
    retry.type = "button";
    retry.addEventListener("click", () => {
      lose.checked = false;
      keyInput.value = e.li.dataset.key;
      updateSecondTab();
      pay();
    });
    e.explain.after(retry);
    e.explain.textContent = "The provider charged the card, and the page dropped the " +
      "connection before the answer came: what a phone in a tunnel does. The server " +
      "finished anyway and recorded payment " + found.id + ", but this page never saw " +
      "it. An app retries with the same key:";
  }

  function prefill() {
    const p = new URLSearchParams(location.hash.slice(1));
    if (p.has("account"))
      for (const o of account.options) if (o.text === p.get("account")) o.selected = true;
    if (p.has("amount")) amount.value = p.get("amount");
    if (p.has("currency")) currency.value = p.get("currency");
    keyInput.value = p.get("key") || newKey();
    $("api-key").textContent = account.value;
    if (p.get("pay") === "1") {
      p.delete("pay");
      history.replaceState(null, "", "#" + p.toString());
      return true;
    }
    return false;
  }

  $("new-key").addEventListener("click", () => {
    keyInput.value = newKey();
    updateSecondTab();
  });
  account.addEventListener("change", () => {
    $("api-key").textContent = account.value;
    updateSecondTab();
    refreshLedger();
  });
  for (const i of [amount, currency, keyInput])
    i.addEventListener("input", updateSecondTab);
  form.addEventListener("submit", pay);

  const autoPay = prefill();
  updateSecondTab();
  refreshLedger().then(() => {
    document.body.dataset.ready = "true";
    if (autoPay) pay();
  });
})();
