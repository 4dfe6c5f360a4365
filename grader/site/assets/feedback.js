/* "Suggest a change": select text in a page and a button offers to open a prefilled issue on the course's
 * repository (course.yaml `repository`), quoting the selection and naming the page and its source file. */
(function () {
  "use strict";

  const MAX_QUOTE = 1500;

  function meta(name) {
    const m = document.querySelector(`meta[name="${name}"]`);
    return m ? m.getAttribute("content") : "";
  }

  function issueUrl(selected) {
    const repo = meta("course-repository");
    if (!repo) return null;
    const source = meta("course-source");
    const h1 = document.querySelector(".md-content h1");
    const page = (h1 ? h1.textContent : document.title).replace(/¶/g, "").trim();
    const quote = selected.length > MAX_QUOTE ? selected.slice(0, MAX_QUOTE) + " …" : selected;
    const body = [
      `Page: ${page} (${location.pathname}${source ? `, source: ${source}` : ""})`,
      "",
      "Selected text:",
      "",
      quote.split(/\r?\n/).map((l) => "> " + l).join("\n"),
      "",
      "Suggested change:",
      "",
    ].join("\n");
    const title = `[site] ${page}: suggestion`;
    return `${repo}/issues/new?title=${encodeURIComponent(title)}&body=${encodeURIComponent(body)}`;
  }

  let button = null;
  function ensureButton() {
    if (button) return button;
    button = document.createElement("a");
    button.className = "suggest-change";
    button.target = "_blank";
    button.rel = "noopener";
    button.textContent = "✎ Suggest a change";
    button.hidden = true;
    button.addEventListener("mousedown", (e) => e.preventDefault());  // keep the selection
    document.body.appendChild(button);
    return button;
  }

  function update() {
    const b = ensureButton();
    const sel = window.getSelection();
    const content = document.querySelector(".md-content");
    if (!sel || sel.isCollapsed || sel.rangeCount === 0 || !content) { b.hidden = true; return; }
    const range = sel.getRangeAt(0);
    const text = sel.toString().trim();
    if (!text || !content.contains(range.commonAncestorContainer)) { b.hidden = true; return; }
    const url = issueUrl(text);
    if (!url) { b.hidden = true; return; }
    b.href = url;
    const rects = range.getClientRects();
    const r = rects.length ? rects[rects.length - 1] : range.getBoundingClientRect();
    const maxLeft = document.documentElement.clientWidth - 190;
    b.style.top = `${window.scrollY + r.bottom + 8}px`;
    b.style.left = `${window.scrollX + Math.max(8, Math.min(r.right - 80, maxLeft))}px`;
    b.hidden = false;
  }

  let timer = null;
  document.addEventListener("selectionchange", () => {
    clearTimeout(timer);
    timer = setTimeout(update, 120);
  });
})();
