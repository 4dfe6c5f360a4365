/* Footnotes as margin notes. On wide screens each footnote is also shown in the right margin beside the
 * paragraph that cites it (the list at the bottom is then hidden); on narrower screens the footnotes stay at
 * the bottom, with the theme's hover preview. */
(function () {
  "use strict";

  function init() {
    const inner = document.querySelector(".md-content__inner");
    if (!inner || inner.dataset.sidenotes) return;
    inner.dataset.sidenotes = "1";
    let count = 0;
    inner.querySelectorAll("a.footnote-ref").forEach((a) => {
      const id = decodeURIComponent((a.getAttribute("href") || "").replace(/^#/, ""));
      const li = id && document.getElementById(id);
      if (!li) return;
      const note = document.createElement("aside");
      note.className = "sidenote";
      note.setAttribute("role", "note");
      const num = document.createElement("span");
      num.className = "sidenote-number";
      num.textContent = a.textContent.trim();
      note.appendChild(num);
      const body = li.cloneNode(true);
      body.querySelectorAll(".footnote-backref").forEach((b) => b.remove());
      body.removeAttribute("id");
      body.querySelectorAll("[id]").forEach((n) => n.removeAttribute("id"));
      while (body.firstChild) note.appendChild(body.firstChild);
      // Float beside the block that cites it: just before a paragraph, or first inside a list item or cell.
      const block = a.closest("p, li, dd, td, th, h2, h3, h4") || a.parentElement;
      if (block.matches("li, dd, td, th")) block.insertBefore(note, block.firstChild);
      else block.parentNode.insertBefore(note, block);
      count++;
    });
    if (count) inner.classList.add("has-sidenotes");
  }

  if (window.document$ && window.document$.subscribe) window.document$.subscribe(init);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
