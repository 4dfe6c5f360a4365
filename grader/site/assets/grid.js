/* The CUDA grid figure.
 *
 *   <div class="cuda-grid" data-grid="4,2,1" data-block="8,4,2"
 *        data-step="thread" data-view="2d" data-caption="..."></div>
 *
 * becomes an interactive figure: gridDim and blockDim inputs, a slider that steps through the blocks or the
 * threads (in launch order: x fastest, then y, then z), a readout of blockIdx, threadIdx, the warp and lane and
 * the global index, and a 2D/3D switch. 2D draws the z-layer that holds the current thread; 3D draws every
 * layer as stacked cubes (an oblique projection, depth going up and to the right).
 */
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";
  const LIMIT = { grid: [8, 8, 4], block: [32, 32, 4] };
  const MAX_CELLS = 2048;
  const LAYER = 2.4, DEPTH_K = 0.8;  // 3D: z-layer spacing in cell sizes, and how much of it shows on screen
  const DX = Math.cos(Math.PI / 6) * DEPTH_K;

  function dims(s, fallback) {
    const v = String(s || "").split(/[ ,x×]+/).filter(Boolean).map((t) => parseInt(t, 10));
    const out = [1, 1, 1];
    for (let i = 0; i < 3; i++) out[i] = Number.isFinite(v[i]) && v[i] > 0 ? v[i] : (i < fallback.length ? fallback[i] : 1);
    return out;
  }
  const prod = (d) => d[0] * d[1] * d[2];
  const fmt = (v) => `(${v[0]}, ${v[1]}, ${v[2]})`;
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

  /* Position k of the slider -> blockIdx, threadIdx (thread mode) or just blockIdx (block mode). */
  function locate(st, k) {
    const nb = prod(st.block);
    const b = st.stepBy === "block" ? k : Math.floor(k / nb);
    const t = st.stepBy === "block" ? null : k % nb;
    const bi = [b % st.grid[0], Math.floor(b / st.grid[0]) % st.grid[1], Math.floor(b / (st.grid[0] * st.grid[1]))];
    const ti = t === null ? null
      : [t % st.block[0], Math.floor(t / st.block[0]) % st.block[1], Math.floor(t / (st.block[0] * st.block[1]))];
    return { b, t, bi, ti };
  }

  function readout(st, loc) {
    const B = st.block, G = st.grid;
    const nBlocks = prod(G), nb = prod(B);
    const parts = [];
    if (loc.ti === null) {
      parts.push(`<span class="cg-pos">block ${loc.b + 1} of ${nBlocks}</span>`);
      parts.push(`<code>blockIdx = ${fmt(loc.bi)}</code>`);
      const first = [0, 1, 2].map((i) => loc.bi[i] * B[i]);
      parts.push(`its threads cover global x ${first[0]}…${first[0] + B[0] - 1}` +
        (G[1] * B[1] > 1 ? `, y ${first[1]}…${first[1] + B[1] - 1}` : "") +
        (G[2] * B[2] > 1 ? `, z ${first[2]}…${first[2] + B[2] - 1}` : ""));
    } else {
      const g = [0, 1, 2].map((i) => loc.bi[i] * B[i] + loc.ti[i]);
      const warp = Math.floor(loc.t / 32), lane = loc.t % 32;
      parts.push(`<span class="cg-pos">thread ${loc.b * nb + loc.t + 1} of ${nBlocks * nb}</span>`);
      parts.push(`<code>blockIdx = ${fmt(loc.bi)}</code> <code>threadIdx = ${fmt(loc.ti)}</code>`);
      parts.push(`warp ${warp} of its block, lane ${lane}`);
      let gx = `<code>x = blockIdx.x * blockDim.x + threadIdx.x = ${loc.bi[0]} * ${B[0]} + ${loc.ti[0]} = ${g[0]}</code>`;
      if (G[1] * B[1] > 1) gx += ` <code>y = ${g[1]}</code>`;
      if (G[2] * B[2] > 1) gx += ` <code>z = ${g[2]}</code>`;
      parts.push(gx);
    }
    return parts.join(" · ");
  }

  /* Cell geometry shared by both views. */
  function layoutSizes(st, width) {
    const G = st.grid, B = st.block;
    const cols = G[0] * B[0], rows = G[1] * B[1];
    const gap = 10, pad = 14, label = 14;
    let c;
    if (st.view === "3d") {
      // Each block's depth (B[2] layers LAYER*c apart, DX of that in x) is added between blocks and once
      // more at the right; solve the width for c.
      const depthX = DX * LAYER * B[2] * (1 + (G[2] - 1) / Math.max(1, G[0]));
      c = (width - 2 * pad - (G[0] - 1) * gap) / (cols + depthX * G[0]);
    } else {
      c = (width - 2 * pad - (G[0] - 1) * gap) / cols;
    }
    c = Math.max(5, Math.min(26, Math.floor(c)));
    return { c, gap, pad, label, cols, rows };
  }

  function draw2d(st, loc, width) {
    const G = st.grid, B = st.block;
    const { c, gap, pad, label } = layoutSizes(st, width);
    const bw = B[0] * c, bh = B[1] * c;
    const zb = loc.bi[2], zt = loc.ti ? loc.ti[2] : 0;
    const W = 2 * pad + G[0] * bw + (G[0] - 1) * gap;
    const H = 2 * pad + G[1] * (bh + label) + (G[1] - 1) * gap + 16;
    const out = [];
    out.push(`<text class="cg-axis" x="${pad}" y="${pad - 2}">x →</text>`);
    for (let by = 0; by < G[1]; by++) {
      for (let bx = 0; bx < G[0]; bx++) {
        const x0 = pad + bx * (bw + gap), y0 = pad + 4 + by * (bh + label + gap) + label;
        const inBlock = loc.bi[0] === bx && loc.bi[1] === by;
        out.push(`<text class="cg-blabel${inBlock ? " cg-on" : ""}" x="${x0}" y="${y0 - 4}">block (${bx},${by}${G[2] > 1 ? "," + zb : ""})</text>`);
        for (let ty = 0; ty < B[1]; ty++) {
          for (let tx = 0; tx < B[0]; tx++) {
            const cur = inBlock && loc.ti && loc.ti[0] === tx && loc.ti[1] === ty;
            const warp = inBlock && loc.ti && Math.floor((tx + ty * B[0] + zt * B[0] * B[1]) / 32) === Math.floor(loc.t / 32);
            const cls = cur ? "cg-cell cg-current" : warp ? "cg-cell cg-in-block cg-in-warp" : inBlock ? "cg-cell cg-in-block" : "cg-cell";
            out.push(`<rect class="${cls}" x="${x0 + tx * c}" y="${y0 + ty * c}" width="${c}" height="${c}"` +
              ` data-b="${bx},${by},${zb}" data-t="${tx},${ty},${zt}"/>`);
          }
        }
        out.push(`<rect class="cg-block${inBlock ? " cg-on" : ""}" x="${x0}" y="${y0}" width="${bw}" height="${bh}"/>`);
      }
    }
    if (G[2] * B[2] > 1) {
      out.push(`<text class="cg-note" x="${pad}" y="${H - 6}">2D view: the layer blockIdx.z = ${zb}, threadIdx.z = ${zt} (` +
        `${G[2] * B[2]} layers in all; 3D shows them all)</text>`);
    }
    return { W, H, body: out.join("") };
  }

  function draw3d(st, loc, width) {
    const G = st.grid, B = st.block;
    const { c, gap, pad, label } = layoutSizes(st, width);
    const s = c * 0.8;                       // cube edge (leaves a small gap between cubes)
    const layer = c * LAYER;                 // distance between z-layers along the depth axis
    const zgap = layer * 0.8;                // extra distance between blocks along z
    const ang = Math.PI / 6, k = DEPTH_K;    // depth direction: up and to the right
    const dx = Math.cos(ang) * k, dy = -Math.sin(ang) * k;
    const depth = (bz, tz) => bz * (B[2] * layer + zgap) + tz * layer;
    const maxDepth = depth(G[2] - 1, B[2] - 1) + s;
    const blockDepth = depth(0, B[2] - 1) + s;   // one block's extent along the depth axis
    const gx = gap + blockDepth * dx, gy = gap + blockDepth * -dy;  // room for it between neighbours
    const offY = pad + label + maxDepth * -dy;
    const bw = B[0] * c, bh = B[1] * c;
    const W = 2 * pad + G[0] * bw + (G[0] - 1) * gx + maxDepth * dx;
    const H = offY + G[1] * (bh + label) + (G[1] - 1) * gy + pad + 10;
    const cubes = [];
    for (let bz = 0; bz < G[2]; bz++) for (let by = 0; by < G[1]; by++) for (let bx = 0; bx < G[0]; bx++) {
      for (let tz = 0; tz < B[2]; tz++) for (let ty = 0; ty < B[1]; ty++) for (let tx = 0; tx < B[0]; tx++) {
        const X = pad + bx * (bw + gx) + tx * c, Y = offY + by * (bh + label + gy) + ty * c, Z = depth(bz, tz);
        cubes.push({ X, Y, Z, b: [bx, by, bz], t: [tx, ty, tz] });
      }
    }
    // Far layers first; within a layer, lower rows first and left columns first, so nearer faces cover.
    cubes.sort((p, q) => q.Z - p.Z || q.Y - p.Y || p.X - q.X);
    const curZ = depth(loc.bi[2], loc.ti ? loc.ti[2] : 0);
    const out = [];
    const P = (x, y) => `${x.toFixed(1)},${y.toFixed(1)}`;
    for (const q of cubes) {
      const sx = q.X + q.Z * dx, sy = q.Y + q.Z * dy;
      const ex = s * dx, ey = s * dy;
      const inBlock = q.b[0] === loc.bi[0] && q.b[1] === loc.bi[1] && q.b[2] === loc.bi[2];
      const cur = inBlock && loc.ti && q.t[0] === loc.ti[0] && q.t[1] === loc.ti[1] && q.t[2] === loc.ti[2];
      const warp = inBlock && loc.ti && Math.floor((q.t[0] + q.t[1] * B[0] + q.t[2] * B[0] * B[1]) / 32) === Math.floor(loc.t / 32);
      let cls = cur ? "cg-cube cg-current" : warp ? "cg-cube cg-in-block cg-in-warp" : inBlock ? "cg-cube cg-in-block" : "cg-cube";
      if (q.Z < curZ) cls += " cg-in-front";  // nearer than the current thread: see-through
      out.push(`<g class="${cls}" data-b="${q.b}" data-t="${q.t}">` +
        `<polygon class="cg-top" points="${P(sx, sy)} ${P(sx + ex, sy + ey)} ${P(sx + s + ex, sy + ey)} ${P(sx + s, sy)}"/>` +
        `<polygon class="cg-side" points="${P(sx + s, sy)} ${P(sx + s + ex, sy + ey)} ${P(sx + s + ex, sy + s + ey)} ${P(sx + s, sy + s)}"/>` +
        `<polygon class="cg-front" points="${P(sx, sy)} ${P(sx + s, sy)} ${P(sx + s, sy + s)} ${P(sx, sy + s)}"/></g>`);
    }
    for (let by = 0; by < G[1]; by++) for (let bx = 0; bx < G[0]; bx++) {
      const on = bx === loc.bi[0] && by === loc.bi[1];
      const x0 = pad + bx * (bw + gx), y0 = offY + by * (bh + label + gy) + bh + 12;
      out.push(`<text class="cg-blabel${on ? " cg-on" : ""}" x="${x0}" y="${y0}">block (${bx},${by},·)</text>`);
    }
    const ax = pad, ay = pad + 2;
    out.push(`<text class="cg-axis" x="${ax}" y="${ay}">x →  y ↓  z ↗</text>`);
    return { W, H, body: out.join("") };
  }

  function render(st) {
    const n = st.stepBy === "block" ? prod(st.grid) : prod(st.grid) * prod(st.block);
    st.pos = Math.min(st.pos, n - 1);
    st.slider.max = String(n - 1);
    st.slider.value = String(st.pos);
    const loc = locate(st, st.pos);
    const cells = prod(st.grid) * prod(st.block);
    const width = Math.max(320, st.fig.clientWidth || 640);
    let svg;
    if (cells > MAX_CELLS) {
      svg = { W: width, H: 60, body: `<text class="cg-note" x="10" y="30">${cells} threads are too many to draw; ` +
        `use at most ${MAX_CELLS}.</text>` };
    } else {
      svg = st.view === "3d" ? draw3d(st, loc, width) : draw2d(st, loc, width);
    }
    st.svg.setAttribute("viewBox", `0 0 ${Math.ceil(svg.W)} ${Math.ceil(svg.H)}`);
    st.svg.setAttribute("width", String(Math.ceil(svg.W)));
    st.svg.setAttribute("height", String(Math.ceil(svg.H)));
    st.svg.setAttribute("data-view", st.view);
    st.svg.setAttribute("data-pos", String(st.pos));
    st.svg.innerHTML = svg.body;
    st.readout.innerHTML = readout(st, loc);
    for (const b of st.viewButtons) b.setAttribute("aria-pressed", String(b.dataset.view === st.view));
    for (const b of st.stepButtons) b.setAttribute("aria-pressed", String(b.dataset.step === st.stepBy));
    st.slider.setAttribute("aria-valuetext", st.readout.textContent);
  }

  function button(text, attrs) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    for (const [k, v] of Object.entries(attrs || {})) b.setAttribute(k, v);
    return b;
  }

  function init(el) {
    if (el.dataset.ready) return;
    el.dataset.ready = "1";
    const st = {
      grid: dims(el.dataset.grid, [4, 2, 1]).map((v, i) => Math.min(v, LIMIT.grid[i])),
      block: dims(el.dataset.block, [8, 4, 1]).map((v, i) => Math.min(v, LIMIT.block[i])),
      stepBy: el.dataset.step === "block" ? "block" : "thread",
      view: el.dataset.view === "3d" ? "3d" : "2d",
      pos: 0,
    };
    const caption = el.dataset.caption || "";
    el.textContent = "";
    const fig = document.createElement("figure");
    fig.className = "cg";
    st.fig = fig;

    const controls = document.createElement("div");
    controls.className = "cg-controls";
    const inputs = [];
    for (const which of ["grid", "block"]) {
      const group = document.createElement("span");
      group.className = "cg-dims";
      group.innerHTML = `<code>${which}Dim</code> `;
      ["x", "y", "z"].forEach((axis, i) => {
        const inp = document.createElement("input");
        inp.type = "number"; inp.min = "1"; inp.max = String(LIMIT[which][i]); inp.value = String(st[which][i]);
        inp.className = `cg-input cg-${which}-${axis}`;
        inp.setAttribute("aria-label", `${which}Dim.${axis}`);
        inp.addEventListener("change", () => {
          const v = Math.max(1, Math.min(LIMIT[which][i], parseInt(inp.value, 10) || 1));
          inp.value = String(v);
          st[which][i] = v;
          render(st);
        });
        inputs.push(inp);
        group.appendChild(inp);
        if (i < 2) group.appendChild(document.createTextNode(" × "));
      });
      controls.appendChild(group);
    }
    const stepSeg = document.createElement("span");
    stepSeg.className = "cg-seg";
    stepSeg.appendChild(document.createTextNode("step through "));
    st.stepButtons = [button("blocks", { "data-step": "block", class: "cg-step-block" }),
                      button("threads", { "data-step": "thread", class: "cg-step-thread" })];
    for (const b of st.stepButtons) {
      b.addEventListener("click", () => {
        if (st.stepBy === b.dataset.step) return;
        const loc = locate(st, st.pos);
        st.stepBy = b.dataset.step;
        st.pos = st.stepBy === "block" ? loc.b : loc.b * prod(st.block);  // stay in the same block
        render(st);
      });
      stepSeg.appendChild(b);
    }
    controls.appendChild(stepSeg);
    const viewSeg = document.createElement("span");
    viewSeg.className = "cg-seg";
    st.viewButtons = [button("2D", { "data-view": "2d", class: "cg-view-2d" }),
                      button("3D", { "data-view": "3d", class: "cg-view-3d" })];
    for (const b of st.viewButtons) {
      b.addEventListener("click", () => { st.view = b.dataset.view; render(st); });
      viewSeg.appendChild(b);
    }
    controls.appendChild(viewSeg);
    fig.appendChild(controls);

    const wrap = document.createElement("div");
    wrap.className = "cg-canvas";
    st.svg = document.createElementNS(NS, "svg");
    st.svg.setAttribute("class", "cg-svg");
    st.svg.setAttribute("role", "img");
    st.svg.setAttribute("aria-label", "CUDA grid of thread blocks");
    wrap.appendChild(st.svg);
    fig.appendChild(wrap);

    const row = document.createElement("div");
    row.className = "cg-slider-row";
    const prev = button("◀", { class: "cg-prev", "aria-label": "previous" });
    const next = button("▶", { class: "cg-next", "aria-label": "next" });
    const play = button("play", { class: "cg-play", "aria-pressed": "false" });
    st.slider = document.createElement("input");
    st.slider.type = "range"; st.slider.min = "0"; st.slider.step = "1"; st.slider.className = "cg-slider";
    st.slider.setAttribute("aria-label", "which block or thread");
    st.slider.addEventListener("input", () => { st.pos = parseInt(st.slider.value, 10) || 0; render(st); });
    const stepBy = (d) => {
      const n = parseInt(st.slider.max, 10) + 1;
      st.pos = (st.pos + d + n) % n;
      render(st);
    };
    prev.addEventListener("click", () => stepBy(-1));
    next.addEventListener("click", () => stepBy(1));
    let timer = null;
    play.addEventListener("click", () => {
      if (timer) { clearInterval(timer); timer = null; play.textContent = "play"; play.setAttribute("aria-pressed", "false"); return; }
      play.textContent = "pause"; play.setAttribute("aria-pressed", "true");
      timer = setInterval(() => stepBy(1), st.stepBy === "block" ? 700 : 120);
    });
    row.append(prev, st.slider, next, play);
    fig.appendChild(row);

    st.readout = document.createElement("div");
    st.readout.className = "cg-readout";
    st.readout.setAttribute("aria-live", "polite");
    fig.appendChild(st.readout);
    if (caption) {
      const cap = document.createElement("figcaption");
      cap.textContent = caption;
      fig.appendChild(cap);
    }
    el.appendChild(fig);
    render(st);
    if (window.ResizeObserver) {
      let last = fig.clientWidth;
      new ResizeObserver(() => { if (Math.abs(fig.clientWidth - last) > 8) { last = fig.clientWidth; render(st); } }).observe(fig);
    }
  }

  function initAll() { document.querySelectorAll("div.cuda-grid").forEach(init); }
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(initAll);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
