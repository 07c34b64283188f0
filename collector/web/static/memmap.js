// memmap.js draws the physical memory map of one application from
// /api/v1/apps/{app}/memmap: PFN buckets aggregated by the collector,
// coloured by RDD, with NUMA node spans, sampled faults and swapped pages.
// Every element with class "memmap" gets one; its data-* attributes give
// the app and the initial window (machine, from, to in PFNs, buckets) and
// moment (at: "" the app's default, now, peak, an RFC 3339 time or
// +DURATION after its start). The map shows the blocks live at that
// moment; a slider over the application's life and a text field pick
// another.

"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  const W = 1000, BAR_Y = 22, BAR_H = 56, NODE_Y = 88, SWAP_Y = 136;

  function el(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function html(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const hex = (n) => "0x" + n.toString(16);
  function parsePFN(s) {
    s = (s || "").trim();
    if (s === "") return null;
    const n = s.startsWith("0x") ? parseInt(s.slice(2), 16) : parseInt(s, 10);
    return Number.isFinite(n) && n >= 0 ? n : null;
  }

  function MemMap(root) {
    this.root = root;
    this.app = root.dataset.app;
    this.machine = root.dataset.machine || "";
    this.from = parsePFN(root.dataset.from);
    this.to = parsePFN(root.dataset.to);
    this.buckets = parseInt(root.dataset.buckets || "1024", 10);
    this.at = root.dataset.at || "";
    this.deepLink = document.body.dataset.page === "memory";
    this.controls = html("div", { class: "memmap-controls" });
    this.status = html("p", { class: "memmap-status muted" });
    this.svgBox = html("div", { class: "memmap-svg" });
    this.legend = html("ul", { class: "memmap-legend" });
    root.append(this.controls, this.status, this.svgBox, this.legend);
    this.load();
  }

  MemMap.prototype.url = function () {
    const p = new URLSearchParams();
    if (this.machine) p.set("machine", this.machine);
    if (this.from !== null) p.set("from", String(this.from));
    if (this.to !== null) p.set("to", String(this.to));
    p.set("buckets", String(this.buckets));
    if (this.at) p.set("at", this.at);
    return "/api/v1/apps/" + encodeURIComponent(this.app) + "/memmap?" + p.toString();
  };

  MemMap.prototype.load = function () {
    this.root.dataset.state = "loading";
    const started = performance.now();
    fetch(this.url(), { headers: { Accept: "application/json" } })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body: body })))
      .then((res) => {
        if (!res.ok) throw new Error(res.body.error || "request failed");
        this.render(res.body, performance.now() - started);
      })
      .catch((err) => {
        this.status.textContent = "memory map unavailable: " + err.message;
        this.status.className = "memmap-status error";
        this.root.dataset.state = "error";
      });
  };

  MemMap.prototype.zoom = function (from, to) {
    const m = this.map;
    from = Math.max(0, Math.floor(from));
    to = Math.min(Math.max(m.limit, from + 1), Math.ceil(to));
    if (to <= from) to = from + 1;
    this.from = from;
    this.to = to;
    this.link();
    this.load();
  };

  // link puts the window and the moment in the memory page's address.
  MemMap.prototype.link = function () {
    if (!this.deepLink || !this.map) return;
    const p = new URLSearchParams(location.search);
    p.set("machine", this.map.machine);
    p.set("from", String(this.from));
    p.set("to", String(this.to));
    if (this.at) p.set("at", this.at);
    else p.delete("at");
    history.replaceState(null, "", location.pathname + "?" + p.toString());
  };

  // show moves the map to moment at, keeping the window.
  MemMap.prototype.show = function (at) {
    this.at = at;
    this.link();
    this.load();
  };

  // renderMoment draws the time control: what the map shows and why, a
  // slider over the application's life (first to last lifecycle record),
  // a field for a time, and the peak and now.
  MemMap.prototype.renderMoment = function (mo) {
    const c = html("div", { class: "memmap-moment" });
    const says = html("p", { class: "moment-says" }, "Showing " + mo.says + ".");
    const first = Date.parse(mo.first), last = Date.parse(mo.last);
    const span = Math.max(last - first, 0);
    const atMs = mo.at ? Math.min(Math.max(Date.parse(mo.at) - first, 0), span) : span;
    const slider = html("input", { type: "range", class: "moment-slider", min: "0", max: String(span), value: String(atMs),
      "aria-label": "moment after the application's start, ms" });
    const field = html("input", { class: "moment-at", value: this.at, size: "28", placeholder: "now, peak, RFC 3339 or +42s",
      "aria-label": "moment" });
    slider.addEventListener("input", () => { field.value = "+" + Number(slider.value) / 1000 + "s"; });
    slider.addEventListener("change", () => this.show("+" + Number(slider.value) / 1000 + "s"));
    const go = html("button", { type: "button", class: "moment-go" }, "show");
    go.addEventListener("click", () => this.show(field.value.trim()));
    const peak = html("button", { type: "button", class: "moment-peak" }, "peak");
    peak.addEventListener("click", () => this.show("peak"));
    const now = html("button", { type: "button", class: "moment-now" }, "now");
    now.addEventListener("click", () => this.show("now"));
    c.append(says, "Moment ", slider, " ", field, go, " ", peak, now);
    return c;
  };

  MemMap.prototype.renderControls = function (m) {
    const c = this.controls;
    c.replaceChildren();
    if ((m.machines || []).length > 1) {
      const sel = html("select", { "aria-label": "machine" });
      for (const name of m.machines) {
        const o = html("option", { value: name }, name);
        if (name === m.machine) o.selected = true;
        sel.append(o);
      }
      sel.addEventListener("change", () => {
        this.machine = sel.value;
        this.from = this.to = null;
        this.load();
      });
      c.append(sel);
    }
    const button = (label, cls, fn) => {
      const b = html("button", { type: "button", class: cls }, label);
      b.addEventListener("click", fn);
      c.append(b);
    };
    button("whole machine", "zoom-all", () => this.zoom(0, m.limit));
    button("zoom out ×4", "zoom-out", () => {
      const span = m.to - m.from, mid = m.from + span / 2;
      this.zoom(mid - span * 2, mid + span * 2);
    });
    for (const n of m.nodes || []) {
      button(n.node < 0 ? "unknown node" : "node " + n.node, "zoom-node", () => this.zoom(n.first_pfn, n.last_pfn + 1));
    }
    const f = html("input", { class: "pfn-from", value: hex(m.from), size: "12", "aria-label": "from PFN" });
    const t = html("input", { class: "pfn-to", value: hex(m.to), size: "12", "aria-label": "to PFN" });
    const go = html("button", { type: "button", class: "zoom-go" }, "go");
    go.addEventListener("click", () => {
      const a = parsePFN(f.value), b = parsePFN(t.value);
      if (a !== null && b !== null && b > a) this.zoom(a, b);
    });
    c.append(" PFN ", f, " – ", t, go);
    if (m.moment) c.append(this.renderMoment(m.moment));
  };

  MemMap.prototype.render = function (m, ms) {
    this.map = m;
    this.from = m.from;
    this.to = m.to;
    this.renderControls(m);
    const span = m.to - m.from;
    const x = (pfn) => ((pfn - m.from) / span) * W;
    const buckets = m.buckets || [];
    let shown = 0;
    for (const b of buckets) for (const r of b.rdds) shown += r.pages;
    this.status.className = "memmap-status muted";
    this.status.textContent =
      "machine " + m.machine + " · PFN " + hex(m.from) + " – " + hex(m.to) + " of " + hex(m.limit) +
      " · " + m.bucket_pages + " page" + (m.bucket_pages === 1 ? "" : "s") + " per bar · " + shown +
      " pages in view of " + m.pages + " on the map (" + m.runs + " stored runs)" +
      (m.hidden ? " · " + m.hidden + " present pages without a visible PFN" : "") +
      " · " + Math.round(ms) + " ms";

    // DAMON heat (accesses per second per GiB) colours a strip over each
    // bar that has it, on a scale from 0 to the hottest bar in view.
    let heatTop = 0;
    for (const b of buckets) if (b.heat !== undefined) heatTop = Math.max(heatTop, b.heat);
    const heatColor = (v) => {
      const f = heatTop > 0 ? Math.min(Math.max(v / heatTop, 0), 1) : 0;
      const lerp = (a, z) => Math.round(a + (z - a) * f).toString(16).padStart(2, "0");
      return "#" + lerp(0xff, 0xbd) + lerp(0xf7, 0x00) + lerp(0xbc, 0x26);
    };
    const svg = el("svg", { viewBox: "0 0 " + W + " 160", width: "100%", class: "memmap-chart", role: "img" });
    svg.append(el("rect", { x: 0, y: BAR_Y, width: W, height: BAR_H, class: "memmap-bg" }));
    for (const b of buckets) {
      const top = b.rdds[0];
      const bx = x(b.start), bw = Math.max(x(b.end) - bx, 0.6);
      const parts = b.rdds.map((r) => "RDD " + r.rdd + ": " + r.pages).join(", ");
      const g = el("rect", {
        x: bx.toFixed(2), y: BAR_Y, width: bw.toFixed(2), height: BAR_H, fill: m.colors[String(top.rdd)],
        class: "bucket", "data-start": b.start, "data-end": b.end, "data-rdd": top.rdd,
        "data-pages": b.rdds.reduce((s, r) => s + r.pages, 0),
      });
      let title = "PFN " + hex(b.start) + (b.end - b.start > 1 ? " – " + hex(b.end - 1) : "") + ": " + parts;
      if (b.thp) title += " · THP " + b.thp;
      if (b.hot) title += " · sampled faults " + b.hot;
      if (b.block) title += " · " + b.block.block_id + " (executor " + b.block.executor_id + ")";
      if (b.heat !== undefined) title += " · DAMON heat " + b.heat.toPrecision(3) + " accesses/s per GiB";
      g.append(el("title", {}, title));
      g.addEventListener("click", () => {
        if (m.bucket_pages === 1 && b.block) {
          location.href = "/apps/" + encodeURIComponent(this.app) + "/blocks/" +
            encodeURIComponent(b.block.executor_id) + "/" + encodeURIComponent(b.block.block_id);
          return;
        }
        const w = Math.max(Math.ceil(span / 16), 16), mid = (b.start + b.end) / 2;
        this.zoom(mid - w / 2, mid + w / 2);
      });
      svg.append(g);
      if (b.thp) {
        svg.append(el("rect", { x: bx.toFixed(2), y: BAR_Y + BAR_H - 4, width: bw.toFixed(2), height: 4, class: "thp" }));
      }
      if (b.heat !== undefined) {
        svg.append(el("rect", { x: bx.toFixed(2), y: BAR_Y, width: bw.toFixed(2), height: 5, fill: heatColor(b.heat),
          class: "heat", "data-start": b.start, "data-heat": b.heat }));
      }
      if (b.hot) {
        const cx = bx + bw / 2;
        svg.append(el("path", { d: "M" + (cx - 4) + " 6 L" + (cx + 4) + " 6 L" + cx + " 16 Z", class: "hot", "data-start": b.start, "data-hot": b.hot }));
      }
    }
    (m.nodes || []).forEach((n, i) => {
      const a = Math.max(x(n.first_pfn), 0), e = Math.min(x(n.last_pfn + 1), W);
      if (e < 0 || a > W) return;
      const cls = "node-span node-" + n.node;
      svg.append(el("rect", { x: a.toFixed(2), y: NODE_Y, width: Math.max(e - a, 1).toFixed(2), height: 8, class: cls,
        "data-node": n.node, "data-first": n.first_pfn, "data-last": n.last_pfn }));
      for (const bx of [a, e]) {
        svg.append(el("line", { x1: bx, x2: bx, y1: BAR_Y - 4, y2: NODE_Y + 10, class: "node-boundary", "data-node": n.node }));
      }
      svg.append(el("text", { x: a + 2, y: NODE_Y + 20 + 11 * (i % 2), class: "axis" }, (n.node < 0 ? "node ?" : "node " + n.node) + ": " + n.pages + " pages"));
    });
    svg.append(el("text", { x: 0, y: 130, class: "axis" }, hex(m.from)));
    svg.append(el("text", { x: W, y: 130, "text-anchor": "end", class: "axis" }, hex(m.to)));
    // Swapped pages have no frame: their own lane, one segment per RDD.
    const swapped = (m.rdds || []).filter((r) => r.swapped > 0);
    const swapTotal = swapped.reduce((s, r) => s + r.swapped, 0);
    if (swapTotal > 0) {
      let sx = 250;
      svg.append(el("text", { x: 0, y: SWAP_Y + 9, class: "axis" }, "swapped, no frame: " + swapTotal + " pages"));
      for (const r of swapped) {
        const w = ((W - 250) * r.swapped) / swapTotal;
        const s = el("rect", { x: sx.toFixed(2), y: SWAP_Y, width: w.toFixed(2), height: 10, fill: m.colors[String(r.rdd)], class: "swapped", "data-rdd": r.rdd, "data-swapped": r.swapped });
        s.append(el("title", {}, "RDD " + r.rdd + ": " + r.swapped + " pages swapped"));
        svg.append(s);
        sx += w;
      }
    }
    // Drag across the bars to zoom to a range.
    let down = null;
    const pfnAt = (ev) => {
      const r = svg.getBoundingClientRect();
      return m.from + ((ev.clientX - r.left) / r.width) * span;
    };
    svg.addEventListener("mousedown", (ev) => { down = { x: ev.clientX, pfn: pfnAt(ev) }; });
    svg.addEventListener("mouseup", (ev) => {
      if (down && Math.abs(ev.clientX - down.x) > 6) {
        const p = pfnAt(ev);
        this.zoom(Math.min(p, down.pfn), Math.max(p, down.pfn));
      }
      down = null;
    });
    this.svgBox.replaceChildren(svg);

    this.legend.replaceChildren();
    for (const r of m.rdds || []) {
      const li = html("li", { "data-rdd": r.rdd, "data-color": m.colors[String(r.rdd)] });
      li.append(html("span", { class: "swatch", style: "background:" + m.colors[String(r.rdd)] }));
      li.append((r.rdd < 0 ? "not RDD blocks" : "RDD " + r.rdd) + ": " + r.present + " pages with a frame, " + r.swapped + " swapped");
      this.legend.append(li);
    }
    this.root.dataset.moment = m.moment ? (m.moment.at || "now") : "";
    this.root.dataset.state = "ready";
    this.root.dataset.renderMs = String(Math.round(ms));
  };

  for (const root of document.querySelectorAll(".memmap")) new MemMap(root);
})();
