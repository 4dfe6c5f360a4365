/* The tile walk of the attention backward (days 16-17).
 *
 *   <div class="tile-walk" data-n="8" data-mode="kv" data-causal="true" data-caption="..."></div>
 *
 * becomes a figure: the n x n grid of S tiles (query tiles i down, key tiles j across), the Q and dO tiles left of
 * it and the K and V tiles above, a slider for the block (which tile it owns) and one for the step of its walk, with
 * prev/next buttons, a causal switch, a line saying what the block loads and computes at that step, and a count of
 * the tiles of S computed. mode "kv": the block owns a key tile and walks the query tiles (day 16, day 17a);
 * mode "q": it owns a query tile and walks the key tiles (day 17b). Without JS the div stays empty.
 */
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";
  const C = 26, GAP = 8, LW = 18, TH = 14;  // cell pitch, strip-to-grid gap, index margins (SVG units)
  const KEY = [["held", "held on chip for the whole walk"], ["loaded", "loaded this step"],
               ["current", "S tile computed this step"], ["done", "done earlier in the walk"],
               ["skipped", "skipped (every key masked)"], ["mask", "diagonal: mask applied inside"]];
  let figures = 0;

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }
  function control(label, ...inputs) {
    const wrap = html("label", "tile-walk-control");
    wrap.append(label + " ", ...inputs);
    return wrap;
  }
  function range(max, label) {
    const r = document.createElement("input");
    r.type = "range"; r.min = "0"; r.max = String(max); r.step = "1"; r.value = "0";
    r.className = "tile-walk-range";
    r.setAttribute("aria-label", label);
    return r;
  }
  function button(text, cls, label) {
    const b = html("button", "tile-walk-button " + cls, text);
    b.type = "button";
    b.setAttribute("aria-label", label);
    return b;
  }

  /* The tiles the owner of tile `own` visits, in order: query tiles (mode kv) or key tiles (mode q). */
  function walk(mode, n, own, causal) {
    const out = [];
    if (mode === "kv") for (let i = causal ? own : 0; i < n; i++) out.push(i);
    else for (let j = 0; j <= (causal ? own : n - 1); j++) out.push(j);
    return out;
  }

  function describe(mode, own, s, m, t, causal) {
    const diag = causal && t === own
      ? "; this is the diagonal tile: the causal mask sets P to 0 where key > query, inside it" : "";
    if (mode === "kv") {
      return `block owns key tile ${own} (K[${own}], V[${own}] and its dK, dV stay on chip) · step ${s + 1} of ${m}: ` +
        `loads Q[${t}], dO[${t}], lse[${t}], D[${t}]; recomputes S = Q Kᵀ, P = exp(S − lse); dV += Pᵀ dO; ` +
        `dP = dO Vᵀ; dS = P ∘ (dP − D); dK += dSᵀ Q${diag} (day 17a: dQ[${t}] += dS K by atomicAdd)`;
    }
    return `block owns query tile ${own} (Q[${own}], dO[${own}], lse[${own}], D[${own}] stay on chip) · ` +
      `step ${s + 1} of ${m}: loads K[${t}], V[${t}]; recomputes S, P, dP, dS${diag}; ` +
      `dQ += dS K (kept in registers, written once at the end)`;
  }

  function init(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    const n = Math.min(16, Math.max(2, parseInt(root.dataset.n, 10) || 8));
    const mode = root.dataset.mode === "q" ? "q" : "kv";
    const st = { own: 0, step: 0, causal: root.dataset.causal === "true" };
    const hatch = `tile-walk-hatch-${++figures}`;
    const x0 = LW + 2 * C + GAP, y0 = TH + 2 * C + GAP;
    const W = x0 + n * C + 16, H = y0 + n * C + 14;

    const fig = html("figure", "tile-walk-figure");
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "tile-walk-svg", role: "img",
                            preserveAspectRatio: "xMinYMin meet" });
    const defs = el("defs", {}, svg);
    const pat = el("pattern", { id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                patternTransform: "rotate(45)" }, defs);
    el("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "tile-walk-hatch" }, pat);
    const layer = el("g", {}, svg);

    const ctrls = html("div", "tile-walk-controls");
    const own = range(n - 1, mode === "kv" ? "block: which key tile it owns" : "block: which query tile it owns");
    const ownOut = html("output", "tile-walk-value", "0");
    const step = range(0, "step of the walk");
    const prev = button("◀", "tile-walk-prev", "previous step"), next = button("▶", "tile-walk-next", "next step");
    const causal = document.createElement("input");
    causal.type = "checkbox"; causal.checked = st.causal; causal.className = "tile-walk-causal";
    ctrls.append(control(mode === "kv" ? "block owns key tile" : "block owns query tile", own, ownOut),
                 control("step", prev, step, next), control("causal", causal));
    const legend = html("div", "tile-walk-legend");
    for (const [cls, text] of KEY) {
      const k = html("span", "tile-walk-key");
      k.append(html("i", "tile-walk-swatch " + cls), text);
      legend.append(k);
    }
    const readout = html("p", "tile-walk-readout");
    readout.setAttribute("aria-live", "polite");
    const count = html("p", "tile-walk-count");
    fig.append(ctrls, svg, legend, readout, count);
    if (root.dataset.caption) fig.append(html("figcaption", "tile-walk-caption", root.dataset.caption));
    root.textContent = "";
    root.append(fig);

    function cell(x, y, cls) {
      const r = el("rect", { x: x + 1, y: y + 1, width: C - 2, height: C - 2, rx: 3, class: "tile-walk-cell " + cls }, layer);
      if (cls === "skipped") r.style.fill = `url(#${hatch})`;  // the pattern's id is per figure, so not in the CSS
    }
    function label(x, y, text, cls) {
      el("text", { x, y, class: "tile-walk-label" + (cls ? " " + cls : "") }, layer).textContent = text;
    }

    function draw() {
      const path = walk(mode, n, st.own, st.causal);
      st.step = Math.max(0, Math.min(st.step, path.length - 1));
      step.max = String(path.length - 1);
      step.value = String(st.step);
      own.value = String(st.own);
      ownOut.textContent = String(st.own);
      const cur = path[st.step], done = new Set(path.slice(0, st.step));
      while (layer.firstChild) layer.removeChild(layer.firstChild);
      // K and V above the grid (one cell per key tile), Q and dO left of it (one per query tile).
      for (let t = 0; t < n; t++) {
        const kcls = mode === "kv" ? (t === st.own ? "held" : "idle") : (t === cur ? "loaded" : "idle");
        const qcls = mode === "kv" ? (t === cur ? "loaded" : "idle") : (t === st.own ? "held" : "idle");
        cell(x0 + t * C, TH, kcls);
        cell(x0 + t * C, TH + C, kcls);
        cell(LW, y0 + t * C, qcls);
        cell(LW + C, y0 + t * C, qcls);
        label(x0 + t * C + C / 2, TH - 4, String(t), "tile-walk-index");
        label(LW - 4, y0 + t * C + C / 2 + 3, String(t), "tile-walk-index tile-walk-right");
      }
      label(x0 + n * C + 4, TH + C / 2 + 4, "K", "tile-walk-name tile-walk-left");
      label(x0 + n * C + 4, TH + 1.5 * C + 4, "V", "tile-walk-name tile-walk-left");
      label(LW + C / 2, y0 + n * C + 12, "Q", "tile-walk-name");
      label(LW + 1.5 * C, y0 + n * C + 12, "dO", "tile-walk-name");
      label(LW + C, TH + C + 4, "i ↓  j →", "tile-walk-axis");
      // The S tiles: rows are query tiles i, columns key tiles j.
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          const mine = mode === "kv" ? j === st.own : i === st.own;
          const other = mode === "kv" ? i : j;
          let cls = "idle";
          if (st.causal && j > i) cls = "skipped";
          else if (mine && other === cur) cls = "current";
          else if (mine && done.has(other)) cls = "done";
          cell(x0 + j * C, y0 + i * C, cls);
          if (st.causal && i === j) {  // the masked half of the diagonal tile: keys after the query
            const x = x0 + j * C + 1, y = y0 + i * C + 1, s = C - 2;
            const tri = el("path", { d: `M${x + 3} ${y}H${x + s}V${y + s - 3}Z`, class: "tile-walk-mask" }, layer);
            el("title", {}, tri).textContent = "diagonal tile: the causal mask is applied inside it";
          }
        }
      }
      // Outline the owned column (kv) or row (q) of S.
      const ox = mode === "kv" ? x0 + st.own * C : x0, oy = mode === "kv" ? y0 : y0 + st.own * C;
      el("rect", { x: ox, y: oy, width: mode === "kv" ? C : n * C, height: mode === "kv" ? n * C : C,
                   class: "tile-walk-own" }, layer);

      const total = st.causal ? n * (n + 1) / 2 : n * n;
      readout.textContent = describe(mode, st.own, st.step, path.length, cur, st.causal);
      count.textContent = `tiles of S this block computes: ${path.length} of ${n} · all blocks: ${total} tiles ` +
        (st.causal ? `(causal: n(n+1)/2 = ${total} of n² = ${n * n})` : `(n² = ${n * n}; causal would do ${n * (n + 1) / 2})`);
      svg.setAttribute("aria-label", `${readout.textContent}. ${count.textContent}`);
      step.setAttribute("aria-valuetext", `step ${st.step + 1} of ${path.length}`);
    }

    const go = (d) => {
      const m = parseInt(step.max, 10) + 1;
      st.step = (st.step + d + m) % m;
      draw();
    };
    own.addEventListener("input", () => { st.own = parseInt(own.value, 10) || 0; st.step = 0; draw(); });
    step.addEventListener("input", () => { st.step = parseInt(step.value, 10) || 0; draw(); });
    prev.addEventListener("click", () => go(-1));
    next.addEventListener("click", () => go(1));
    causal.addEventListener("change", () => { st.causal = causal.checked; st.step = 0; draw(); });
    draw();
  }

  function all() { document.querySelectorAll("div.tile-walk").forEach(init); }
  // Material's document$ fires for the first page and for every page its instant navigation swaps in
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(all);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();
