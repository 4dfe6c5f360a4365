/* The tile walk of the attention backward (days 16-17).
 *
 *   <div class="tile-walk" data-n="8" data-mode="kv" data-causal="true" data-caption="..."></div>
 *
 * becomes a figure: the n x n grid of S tiles (query tiles down, key tiles across), the Q/dO tiles beside it and
 * the K/V tiles above, a slider for the block (which tile it owns) and one for the step of its walk, a causal
 * switch, and a line saying what the block loads and computes at that step. mode "kv": the block owns a key tile
 * and walks the query tiles (day 16, day 17a); mode "q": it owns a query tile and walks the key tiles (day 17b).
 */
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";
  const C = 26, GAP = 6;  // cell size and the gap between the strips and the grid, in SVG units

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function control(label, input) {
    const wrap = document.createElement("label");
    wrap.className = "tile-walk-control";
    wrap.append(label + " ", input);
    return wrap;
  }
  function range(max) {
    const r = document.createElement("input");
    r.type = "range"; r.min = "0"; r.max = String(max); r.value = "0";
    return r;
  }

  /* The tiles the owner of tile `own` visits, in order. */
  function walk(mode, n, own, causal) {
    const out = [];
    if (mode === "kv") for (let i = causal ? own : 0; i < n; i++) out.push(i);
    else for (let j = 0; j <= (causal ? own : n - 1); j++) out.push(j);
    return out;
  }

  function init(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    const n = Math.min(16, Math.max(2, parseInt(root.dataset.n, 10) || 8));
    const mode = root.dataset.mode === "q" ? "q" : "kv";
    const st = { own: 0, step: 0, causal: root.dataset.causal === "true" };

    const svg = el("svg", { viewBox: `0 0 ${2 * C + GAP + n * C + 2} ${2 * C + GAP + n * C + 2}`,
                            class: "tile-walk-svg", role: "img" });
    const ctrls = document.createElement("div");
    ctrls.className = "tile-walk-controls";
    const own = range(n - 1), step = range(0);
    const causal = document.createElement("input");
    causal.type = "checkbox"; causal.checked = st.causal;
    ctrls.append(control(mode === "kv" ? "block (key tile)" : "block (query tile)", own), control("step", step),
                 control("causal", causal));
    const readout = document.createElement("p");
    readout.className = "tile-walk-readout";
    readout.setAttribute("aria-live", "polite");
    root.append(svg, ctrls, readout);
    if (root.dataset.caption) {
      const cap = document.createElement("p");
      cap.className = "tile-walk-caption";
      cap.textContent = root.dataset.caption;
      root.append(cap);
    }

    function cell(x, y, cls, text) {
      el("rect", { x, y, width: C - 2, height: C - 2, rx: 3, class: "tile-walk-cell " + cls }, svg);
      if (text) el("text", { x: x + (C - 2) / 2, y: y + C / 2 + 3, class: "tile-walk-label" }, svg).textContent = text;
    }

    function draw() {
      const path = walk(mode, n, st.own, st.causal);
      st.step = Math.min(st.step, path.length - 1);
      step.max = String(path.length - 1);
      step.value = String(st.step);
      const cur = path[st.step], done = new Set(path.slice(0, st.step));
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const x0 = 2 * C + GAP, y0 = 2 * C + GAP;
      // K and V above (columns: key tiles), Q and dO to the left (rows: query tiles)
      for (let t = 0; t < n; t++) {
        const keyOwned = mode === "kv" ? t === st.own : t === cur;
        const queryOwned = mode === "kv" ? t === cur : t === st.own;
        const kcls = mode === "kv" ? (keyOwned ? "held" : "idle") : (keyOwned ? "loaded" : "idle");
        const qcls = mode === "kv" ? (queryOwned ? "loaded" : "idle") : (queryOwned ? "held" : "idle");
        cell(x0 + t * C, 0, kcls, t === 0 ? "K" : "");
        cell(x0 + t * C, C, kcls, t === 0 ? "V" : "");
        cell(0, y0 + t * C, qcls, t === 0 ? "Q" : "");
        cell(C, y0 + t * C, qcls, t === 0 ? "dO" : "");
      }
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          const mine = mode === "kv" ? j === st.own : i === st.own;
          const other = mode === "kv" ? i : j;
          let cls = "idle";
          if (st.causal && j > i) cls = "skipped";
          else if (mine && other === cur) cls = "current";
          else if (mine && done.has(other)) cls = "done";
          cell(x0 + j * C, y0 + i * C, cls, st.causal && i === j && mine ? "◩" : "");
        }
      }
      const total = st.causal ? n * (n + 1) / 2 : n * n;
      const what = mode === "kv"
        ? `block owns key tile ${st.own} (K, V and its dK, dV stay on chip) · step ${st.step + 1} of ${path.length}: ` +
          `loads Q[${cur}], dO[${cur}], lse[${cur}], D[${cur}]; S = Q Kᵀ, P = exp(S − lse), dP = dO Vᵀ, ` +
          `dS = P ∘ (dP − D); dV += Pᵀ dO, dK += dSᵀ Q (day 17a: dQ[${cur}] += dS K by atomicAdd)`
        : `block owns query tile ${st.own} (Q, dO and its dQ stay on chip) · step ${st.step + 1} of ${path.length}: ` +
          `loads K[${cur}], V[${cur}]; S, P, dP, dS again; dQ += dS K (written once, at the end)`;
      const mask = st.causal && cur === st.own ? " The diagonal tile: the mask (key j ≤ query i) applies inside it." : "";
      readout.textContent = `${what}.${mask} Tiles of S this block computes: ${path.length} of ${n}; ` +
        `all blocks: ${total} (${st.causal ? "causal: n(n+1)/2" : "n²"}).`;
      svg.setAttribute("aria-label", readout.textContent);
    }

    own.addEventListener("input", () => { st.own = parseInt(own.value, 10); st.step = 0; draw(); });
    step.addEventListener("input", () => { st.step = parseInt(step.value, 10); draw(); });
    causal.addEventListener("change", () => { st.causal = causal.checked; st.step = 0; draw(); });
    draw();
  }

  function all() { document.querySelectorAll("div.tile-walk").forEach(init); }
  // Material's document$ fires for the first page and for every page its instant navigation swaps in
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(all);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();
