// Live updates of a tht reviewer page (no build step, no dependency). The server says *that* the
// ledger moved (server-sent events); the page fetches itself again and swaps its regions. A
// review the reviewer may be filling in is never replaced: new reviews are added, closed ones are
// marked as no longer open.
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root || !window.EventSource) { return; }
  var busy = false, again = false;

  function swapReviews(current, fresh) {
    var seen = {};
    fresh.querySelectorAll("article.review").forEach(function (art) {
      seen[art.dataset.seq] = true;
      if (!current.querySelector('article.review[data-seq="' + art.dataset.seq + '"]')) {
        current.appendChild(document.importNode(art, true));
      }
    });
    current.querySelectorAll("article.review").forEach(function (art) {
      if (!seen[art.dataset.seq] && !art.classList.contains("closed")) {
        art.classList.add("closed");
        art.querySelectorAll("button, input, textarea").forEach(function (el) { el.disabled = true; });
        var note = document.createElement("p");
        note.className = "flash info closed-note";
        note.setAttribute("role", "status");
        note.textContent = "Review " + art.dataset.seq +
          " is no longer open: it was answered or closed meanwhile (see the history below).";
        art.insertBefore(note, art.firstChild);
      }
    });
    var empty = current.querySelector("#no-reviews");
    var open = current.querySelectorAll("article.review:not(.closed)").length;
    if (empty && open) { empty.remove(); }
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(root.dataset.page, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("live");
        if (!next) { return; }
        root.dataset.seq = next.dataset.seq || "";
        next.querySelectorAll("[data-region]").forEach(function (region) {
          var mine = document.getElementById(region.id);
          if (!mine) { return; }
          if (region.id === "reviews") { swapReviews(mine, region); return; }
          mine.replaceWith(document.importNode(region, true));
        });
        document.body.dataset.refreshed = String(Date.now());
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  var source = new EventSource(root.dataset.live, { withCredentials: true });
  source.addEventListener("ledger", refresh);
})();
