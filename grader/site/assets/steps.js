/* Step-through figures.
 *
 *   <div class="steps" markdown>
 *   <div class="step" markdown>...frame 1 (any markdown or SVG)...</div>
 *   <div class="step" markdown>...frame 2...</div>
 *   </div>
 *
 * On GitHub the frames simply follow each other; here one frame shows at a time, with a slider, previous and
 * next buttons, and the arrow keys while the figure has focus.
 */
(function () {
  "use strict";

  function init(el) {
    if (el.dataset.ready) return;
    const frames = Array.from(el.children).filter((c) => c.classList.contains("step"));
    if (frames.length === 0) return;
    el.dataset.ready = "1";
    el.classList.add("steps--live");
    el.tabIndex = 0;
    const bar = document.createElement("div");
    bar.className = "steps-bar";
    const mk = (text, cls, label) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.className = cls; b.setAttribute("aria-label", label);
      return b;
    };
    const prev = mk("◀", "steps-prev", "previous step");
    const next = mk("▶", "steps-next", "next step");
    const slider = document.createElement("input");
    slider.type = "range"; slider.min = "1"; slider.max = String(frames.length); slider.step = "1";
    slider.className = "steps-slider";
    slider.setAttribute("aria-label", "step");
    const label = document.createElement("span");
    label.className = "steps-label";
    bar.append(prev, slider, next, label);
    el.insertBefore(bar, el.firstChild);

    let cur = 0;
    const show = (i) => {
      cur = Math.max(0, Math.min(frames.length - 1, i));
      frames.forEach((f, j) => { f.hidden = j !== cur; f.setAttribute("aria-hidden", String(j !== cur)); });
      slider.value = String(cur + 1);
      label.textContent = `step ${cur + 1} of ${frames.length}`;
      el.dataset.step = String(cur + 1);
      prev.disabled = cur === 0;
      next.disabled = cur === frames.length - 1;
    };
    slider.addEventListener("input", () => show(parseInt(slider.value, 10) - 1));
    prev.addEventListener("click", () => show(cur - 1));
    next.addEventListener("click", () => show(cur + 1));
    el.addEventListener("keydown", (e) => {
      if (e.target === slider) return;  // the slider handles its own arrows
      if (e.key === "ArrowRight") { show(cur + 1); e.preventDefault(); }
      if (e.key === "ArrowLeft") { show(cur - 1); e.preventDefault(); }
    });
    show(0);
  }

  function initAll() { document.querySelectorAll("div.steps").forEach(init); }
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(initAll);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
