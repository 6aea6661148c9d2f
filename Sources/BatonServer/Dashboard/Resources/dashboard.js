// Baton's dashboard: refreshes the parts of a page marked `data-live` every two seconds, highlights
// JSON, asks before a destructive action. It works on text and on nodes the server rendered (and
// escaped); it never builds markup from strings.
"use strict";
(() => {
  const highlightPattern = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;

  function highlight(root) {
    for (const pre of root.querySelectorAll("pre.json:not([data-highlighted])")) {
      const text = pre.textContent;
      const parts = [];
      let last = 0;
      for (const match of text.matchAll(highlightPattern)) {
        if (match.index > last) parts.push(document.createTextNode(text.slice(last, match.index)));
        const span = document.createElement("span");
        span.className = match[1] ? (match[2] ? "key" : "string") : match[3] ? "number" : "literal";
        span.textContent = match[1] ?? match[0];
        parts.push(span);
        if (match[2]) parts.push(document.createTextNode(match[2]));
        last = match.index + match[0].length;
      }
      if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
      pre.replaceChildren(...parts);
      pre.dataset.highlighted = "";
    }
  }

  // A selection under way, or text being typed into a form of a live region (a skip's reason), is
  // not swept away: asked before a refresh is fetched and again before it replaces anything, since
  // the person may have started while it was on its way. An opened details element is kept open.
  function busy() {
    if (document.querySelector("[data-live] input[type=checkbox]:checked")) return true;
    const fields = [...document.querySelectorAll("[data-live] input:not([type=hidden]), [data-live] textarea")];
    return fields.some((field) => field === document.activeElement || field.value !== field.defaultValue);
  }

  let refreshing = false;
  async function refresh() {
    const regions = [...document.querySelectorAll("[data-live]")];
    if (refreshing || regions.length === 0 || regions.every((region) => region.hasAttribute("data-live-stop"))) return;
    if (busy()) return;
    refreshing = true;
    try {
      const response = await fetch(location.href, { headers: { "X-Baton-Live": "1" }, credentials: "same-origin" });
      if (response.redirected && new URL(response.url).pathname === "/ui/login") return location.reload();
      if (!response.ok) return;
      const next = new DOMParser().parseFromString(await response.text(), "text/html");
      if (busy()) return;
      for (const region of regions) {
        const fresh = next.querySelector(`[data-live="${CSS.escape(region.dataset.live)}"]`);
        if (!fresh) continue;
        const open = new Set([...region.querySelectorAll("details[open] > summary")].map((s) => s.textContent));
        const imported = document.importNode(fresh, true);
        for (const summary of imported.querySelectorAll("details > summary")) {
          if (open.has(summary.textContent)) summary.parentElement.open = true;
        }
        region.replaceWith(imported);
        highlight(imported);
      }
    } catch {
      // The server is away for a moment: the next tick tries again.
    } finally {
      refreshing = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    highlight(document);
    setInterval(refresh, 2000);
  });
  document.addEventListener("submit", (event) => {
    const question = event.submitter?.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  });
  // `/` goes to the job id box, as it goes to the search box of most sites, unless typed into a field.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
    const box = document.getElementById("find-job");
    if (!box) return;
    event.preventDefault();
    box.focus();
  });
  document.addEventListener("change", (event) => {
    if (!event.target.matches("[data-select-all]")) return;
    for (const box of document.querySelectorAll("input[name=id][form=bulk]")) box.checked = event.target.checked;
  });
})();
