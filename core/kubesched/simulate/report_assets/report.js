/* kubesched simulation report: unpacks the inline data (gzip, base64) and draws the page.
   Plain DOM and inline SVG, no library, no network. Sections missing from the data
   (older or newer reports) are skipped. */
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const RESULTS = ["scheduled", "pending", "nodeMissing", "rejected", "preempted", "deleted"];
  // ColorBrewer YlGnBu, 7 classes: sequential and colour-blind safe; light = idle, dark = full.
  const SCALE = ["#ffffcc", "#c7e9b4", "#7fcdbb", "#41b6c4", "#1d91c0", "#225ea8", "#0c2c84"];
  // Okabe & Ito: categorical, colour-blind safe (score plugins in stacked bars).
  const CATEGORICAL = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000"];
  const PAGE = 50;
  let D = null; // the data
  const S = { resource: "cpu", node: -1, cursor: -1, pod: -1 }; // cursor: the map's keyboard position, -1 before any key

  // Natural order for names (node-9 before node-10).
  const collator = new Intl.Collator("en", { numeric: true });
  function compare(x, y) { return typeof x === "string" ? collator.compare(x, y) : x < y ? -1 : x > y ? 1 : 0; }
  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, (c) => (
      { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }
  function str(i) { return i == null || i < 0 ? null : D.strings[i]; }
  function plural(n, w) { return `${n.toLocaleString("en")} ${w}${n === 1 ? "" : "s"}`; }
  function num(n) { return Number(n).toLocaleString("en"); }
  function secs(t) { return t == null ? "–" : `${+Number(t).toFixed(3)} s`; }
  function announce(text) { $("#announce").textContent = text; }

  // -- resources ----------------------------------------------------------------------------
  const GIB = 1024 ** 3;
  function isBytes(r) { return r === "memory" || r === "ephemeralStorage" || r.startsWith("hugepages-"); }
  function resLabel(r) {
    return { cpu: "CPU (cores)", memory: "memory (GiB)", ephemeralStorage: "ephemeral storage (GiB)", pods: "pods" }[r]
      || (isBytes(r) ? `${r} (GiB)` : r);
  }
  function amount(r, v) {
    if (r === "cpu") return `${+(v / 1000).toFixed(2)}`;
    if (isBytes(r)) return `${+(v / GIB).toFixed(1)}`;
    return num(v);
  }
  function pct(used, total) {
    if (total <= 0) return used > 0 ? "∞" : "–";
    return `${Math.round((100 * used) / total)}%`;
  }
  function ratio(i, r) {
    const a = D.nodes.allocatable[r][i];
    return a > 0 ? D.nodes.requested[r][i] / a : null;
  }
  function colour(x) {
    if (x == null) return "#d9d9d9";
    return SCALE[Math.min(SCALE.length - 1, Math.floor(Math.max(0, x) * SCALE.length))];
  }
  function bar(used, total) {
    const x = total > 0 ? used / total : 0;
    return `<span class="bar${x > 1 ? " over" : ""}" aria-hidden="true"><span style="width:${Math.min(100, 100 * x).toFixed(1)}%"></span></span>`;
  }
  // A name (pod, node, zone, profile) on one line (report.css says why), in a table cell
  // shortened to CELL characters; the full name is its tooltip.
  const CELL = 28;
  function nameSpan(s, n) { return `<span class="name" title="${esc(s)}">${esc(shorten(s, n))}</span>`; }
  // A name shortened to n characters by its middle (no limit without n): names of one
  // cluster often share a long prefix and differ at the end (pool-a-7f9x, pool-a-k2mq).
  function shorten(s, n) {
    if (!n || s.length <= n) return s;
    const head = Math.ceil((n - 1) / 2);
    return `${s.slice(0, head)}…${s.slice(s.length - (n - 1 - head))}`;
  }
  function badge(result) { return `<span class="badge r-${esc(result)}">${esc(result)}</span>`; }
  function nodeMarks(i) {
    const m = [];
    if (D.nodes.unschedulable[i]) m.push("cordoned");
    if (D.nodes.taints[i].length) m.push(`tainted (${D.nodes.taints[i].join(", ")})`);
    return m;
  }

  // -- summary ------------------------------------------------------------------------------
  function renderMeta() {
    const m = D.meta;
    const pods = D.pods.name.length, nodes = D.nodes.name.length;
    $("#meta").textContent = `${plural(pods, "pod")} on ${plural(nodes, "node")} · seed ${m.seed} · ` +
      `detail ${m.detail} · ${secs(m.virtualTimeSeconds)} virtual time · ${secs(m.wallTimeSeconds)} wall time · ` +
      `${plural(m.cycles, "cycle")} · ${m.stopReason}`;
  }

  function renderSummary() {
    const m = D.meta;
    const totals = { scheduled: 0, pending: 0, rejected: 0, preempted: 0, deleted: 0, attempts: 0 };
    for (const row of D.summary) for (const k in totals) totals[k] += row[k] || 0;
    const cards = [
      ["pods", D.pods.name.length, "summary-pods"], ["nodes", D.nodes.name.length, "summary-nodes"],
      ["scheduled", totals.scheduled], ["pending", totals.pending], ["rejected", totals.rejected],
      ["preempted", totals.preempted], ["attempts", totals.attempts],
      ["virtual time", secs(m.virtualTimeSeconds)], ["wall time", secs(m.wallTimeSeconds)],
    ];
    let h = `<div class="cards">${cards.map(([k, v, id]) =>
      `<div class="card"><span class="v"${id ? ` id="${id}"` : ""}>${typeof v === "number" ? num(v) : esc(v)}</span><span class="k">${esc(k)}</span></div>`).join("")}</div>`;
    if (m.stopReason === "stalled") {
      h += `<p class="panel">Stopped as <strong>stalled</strong>: pods kept retrying with no progress for 30 minutes of virtual time.</p>`;
    }
    h += `<div class="table-scroll"><table id="profiles"><caption>Pods per profile</caption><thead><tr><th scope="col">profile</th>` +
      `${RESULTS.map((r) => `<th scope="col" class="num">${r}</th>`).join("")}<th scope="col" class="num">attempts</th></tr></thead><tbody>`;
    for (const row of D.summary) {
      h += `<tr><th scope="row">${nameSpan(row.profile, CELL)}${row.served ? "" : " <em>(no such profile)</em>"}</th>` +
        `${RESULTS.map((r) => `<td class="num">${num(row[r] || 0)}</td>`).join("")}<td class="num">${num(row.attempts || 0)}</td></tr>`;
    }
    h += "</tbody></table></div>";
    if (D.meta.detail !== "full") {
      h += `<p class="note">The run kept outcomes only (<code>--detail summary</code>): pod stories show attempts and messages, not filter verdicts or scores.</p>`;
    } else if (D.meta.explainedPods < D.pods.name.length) {
      h += `<p class="note">Filter verdicts and scores are kept for ${num(D.meta.explainedPods)} pods (pending, preemption and rejected pods first, then a sample; name more with <code>--explain</code>).</p>`;
    }
    if (D.rejections && D.rejections.length) {
      h += `<h3>Rejected by admission (${num(D.rejections.length)})</h3><ul class="rejections">` +
        D.rejections.slice(0, 200).map((r) => `<li><strong>${esc(r.object)}</strong>: <span class="msg">${esc(r.message)}</span></li>`).join("") + "</ul>";
    }
    $("#summary .body").innerHTML = h;
  }

  // -- cluster ------------------------------------------------------------------------------
  let zones = []; // [{name, nodes: [index...], cols}]
  let order = []; // node indexes in map order
  let cell = { w: 9, h: 9, gap: 1, label: false };
  const position = new Map(); // node index -> [x, y] in its zone's drawing

  function outline(x, y, c, cls) {
    return `<rect class="${cls}" x="${x + 1}" y="${y + 1}" width="${cell.w - 2}" height="${cell.h - 2}" fill="none" stroke="${c}" stroke-width="${cell.label ? 3 : 2}"/>`;
  }

  // The keyboard position is one outline moved from tile to tile: redrawing thousands of
  // tiles on every key press would lag on a large cluster.
  function drawCursor() {
    for (const el of document.querySelectorAll("#map .cursor")) el.remove();
    if (S.cursor < 0) return;
    const i = order[S.cursor], g = document.querySelector(`#map g.node[data-node="${i}"]`);
    if (!g) return;
    const [x, y] = position.get(i);
    g.parentNode.insertAdjacentHTML("beforeend", outline(x, y, "#0050b3", "cursor"));
  }

  function groupZones() {
    const by = new Map();
    D.nodes.name.forEach((_, i) => {
      const z = str(D.nodes.zone[i]) || "(no zone)";
      if (!by.has(z)) by.set(z, []);
      by.get(z).push(i);
    });
    zones = [...by.keys()].sort().map((name) => ({ name, nodes: by.get(name) }));
    const n = D.nodes.name.length;
    cell = n <= 60 ? { w: 112, h: 46, gap: 4, label: true } : n <= 600 ? { w: 16, h: 16, gap: 2, label: false } : { w: 9, h: 9, gap: 1, label: false };
    for (const z of zones) {
      z.cols = cell.label ? Math.min(z.nodes.length, 4) : Math.max(1, Math.min(z.nodes.length, Math.ceil(Math.sqrt(z.nodes.length * 2.5))));
    }
    order = zones.flatMap((z) => z.nodes);
  }

  function zoneSvg(z) {
    const r = S.resource, rows = Math.ceil(z.nodes.length / z.cols);
    const W = z.cols * (cell.w + cell.gap), H = rows * (cell.h + cell.gap);
    let s = "";
    z.nodes.forEach((i, k) => {
      const x = (k % z.cols) * (cell.w + cell.gap), y = Math.floor(k / z.cols) * (cell.h + cell.gap);
      position.set(i, [x, y]);
      const x0 = ratio(i, r), fill = colour(x0);
      const marks = nodeMarks(i);
      const title = `${D.nodes.name[i]}: ${r} ${amount(r, D.nodes.requested[r][i])}/${amount(r, D.nodes.allocatable[r][i])} (${pct(D.nodes.requested[r][i], D.nodes.allocatable[r][i])})${marks.length ? "; " + marks.join("; ") : ""}`;
      s += `<g class="node" data-node="${i}"><title>${esc(title)}</title><rect x="${x}" y="${y}" width="${cell.w}" height="${cell.h}" fill="${fill}" stroke="#555" stroke-width="0.5"/>`;
      if (D.nodes.unschedulable[i]) s += `<rect x="${x}" y="${y}" width="${cell.w}" height="${cell.h}" fill="url(#hatch)"/>`;
      if (D.nodes.taints[i].length) {
        const t = Math.max(4, Math.min(12, cell.w / 2.5));
        s += `<path d="M${x + cell.w - t} ${y} L${x + cell.w} ${y} L${x + cell.w} ${y + t} Z" fill="#000" stroke="#fff" stroke-width="0.5"/>`;
      }
      if (cell.label) {
        // Each label has a plate of its own (fitPlates sizes it to the text).
        s += `<rect class="plate" fill="#fff"/><text class="label" x="${x + 6}" y="${y + 18}" font-size="12" fill="#111">${esc(shorten(D.nodes.name[i], 15))}</text>` +
          `<rect class="plate" fill="#fff"/><text class="label" x="${x + 6}" y="${y + 36}" font-size="12" fill="#111">${pct(D.nodes.requested[r][i], D.nodes.allocatable[r][i])}${D.nodes.unschedulable[i] ? " cordoned" : ""}</text>`;
      }
      if (i === S.node) s += outline(x, y, "#d55e00", "");
      s += "</g>";
    });
    return { svg: s, W, H };
  }

  function zoneTotals(nodes, r) {
    let req = 0, alloc = 0;
    for (const i of nodes) { req += D.nodes.requested[r][i]; alloc += D.nodes.allocatable[r][i]; }
    return [req, alloc];
  }

  function renderMap() {
    const r = S.resource;
    const defs = `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="none"/><line x1="0" y1="0" x2="0" y2="6" stroke="#000" stroke-width="2.2" opacity="0.75"/></pattern></defs>`;
    $("#map").innerHTML = zones.map((z, zi) => {
      const { svg, W, H } = zoneSvg(z);
      const [req, alloc] = zoneTotals(z.nodes, r);
      return `<div class="zone"><h3>${esc(z.name)} — ${plural(z.nodes.length, "node")}, ${esc(r)} ${pct(req, alloc)}</h3>` +
        `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" aria-hidden="true">${zi === 0 ? defs : ""}${svg}</svg></div>`;
    }).join("");
    fitPlates();
    drawCursor();
  }

  // Tile labels sit on solid white plates the size of their text: over a cordoned node's
  // hatching, or the middle steps of the scale, no one text colour keeps WCAG AA's 4.5:1,
  // while a plate only as large as the text leaves most of the tile's colour in view.
  function fitPlates() {
    for (const t of document.querySelectorAll("#map text.label")) {
      const b = t.getBBox(), plate = t.previousElementSibling;
      plate.setAttribute("x", b.x - 2);
      plate.setAttribute("y", b.y - 0.5);
      plate.setAttribute("width", b.width + 4);
      plate.setAttribute("height", b.height + 1);
      plate.setAttribute("rx", 2);
    }
  }

  function renderLegend() {
    const steps = SCALE.map((c, k) => `<span><span class="sw" style="background:${c}"></span>${Math.round((100 * k) / SCALE.length)}–${Math.round((100 * (k + 1)) / SCALE.length)}%</span>`).join("");
    $("#legend").innerHTML = `${steps}<span><span class="sw" style="background:#d9d9d9"></span>none allocatable</span>` +
      `<span><svg width="18" height="14" aria-hidden="true"><rect width="18" height="14" fill="#fff" stroke="#444"/><rect width="18" height="14" fill="url(#hatch)"/></svg> cordoned</span>` +
      `<span><svg width="18" height="14" aria-hidden="true"><rect width="18" height="14" fill="#fff" stroke="#444"/><path d="M10 0 L18 0 L18 8 Z" fill="#000"/></svg> tainted</span>`;
  }

  function mapDescription() {
    const r = S.resource;
    const parts = zones.map((z) => { const [q, a] = zoneTotals(z.nodes, r); return `${z.name}: ${z.nodes.length} nodes, ${pct(q, a)}`; });
    const cordoned = D.nodes.unschedulable.reduce((a, b) => a + b, 0);
    const tainted = D.nodes.taints.filter((t) => t.length).length;
    return `Cluster map of ${plural(D.nodes.name.length, "node")} by zone, coloured by ${r} requested over allocatable. ` +
      `${parts.join("; ")}. ${cordoned} cordoned, ${tainted} tainted. Arrow keys move between nodes, Enter shows one.`;
  }

  function renderZoneBars() {
    const r = S.resource;
    let h = `<div class="table-scroll"><table id="zone-bars"><caption>Requested / allocatable ${esc(resLabel(r))} per zone</caption><thead><tr><th scope="col">zone</th><th scope="col" class="num">nodes</th><th scope="col" class="num">requested</th><th scope="col" class="num">allocatable</th><th scope="col">use</th><th scope="col" class="num">%</th></tr></thead><tbody>`;
    const row = (name, nodes) => {
      const [q, a] = zoneTotals(nodes, r);
      return `<tr><th scope="row">${nameSpan(name, CELL)}</th><td class="num">${num(nodes.length)}</td><td class="num">${amount(r, q)}</td><td class="num">${amount(r, a)}</td><td>${bar(q, a)}</td><td class="num">${pct(q, a)}</td></tr>`;
    };
    for (const z of zones) h += row(z.name, z.nodes);
    if (zones.length > 1) h += row("all zones", order);
    $("#zone-bars-wrap").innerHTML = h + "</tbody></table></div>";
  }

  // The node table: sortable, paged.
  const NT = { sort: "use", dir: -1, page: 0 };
  function renderNodeTable() {
    const r = S.resource;
    const cols = ["cpu", "memory", "pods"];
    if (!cols.includes(r)) cols.push(r);
    const idx = order.slice();
    const key = {
      name: (i) => D.nodes.name[i], zone: (i) => str(D.nodes.zone[i]) || "",
      use: (i) => { const x = ratio(i, r); return x == null ? -1 : x; },
      pods: (i) => D.nodes.requested.pods[i],
    }[NT.sort];
    // Ties keep name order whatever the direction.
    const keys = idx.map(key), names = D.nodes.name;
    const pos = new Map(idx.map((n, k) => [n, k]));
    idx.sort((a, b) => compare(keys[pos.get(a)], keys[pos.get(b)]) * NT.dir || collator.compare(names[a], names[b]));
    const pages = Math.max(1, Math.ceil(idx.length / 25));
    NT.page = Math.min(NT.page, pages - 1);
    const th = (k, label) => `<th scope="col" aria-sort="${NT.sort === k ? (NT.dir > 0 ? "ascending" : "descending") : "none"}"><button class="sort" data-nsort="${k}">${label}</button></th>`;
    let h = `<div class="table-scroll"><table id="node-table"><caption>Nodes, requested / allocatable (sorted by ${esc(NT.sort === "use" ? r + " use" : NT.sort)})</caption><thead><tr>${th("name", "node")}${th("zone", "zone")}<th scope="col">marks</th>` +
      cols.map((c) => c === r ? th("use", esc(resLabel(c))) : `<th scope="col">${esc(resLabel(c))}</th>`).join("") + "</tr></thead><tbody>";
    for (const i of idx.slice(NT.page * 25, NT.page * 25 + 25)) {
      h += `<tr><th scope="row">${nodeLink(D.nodes.name[i], CELL)}</th><td>${nameSpan(str(D.nodes.zone[i]) || "–", CELL)}</td><td>${esc(nodeMarks(i).join("; "))}</td>` +
        cols.map((c) => { const q = D.nodes.requested[c][i], a = D.nodes.allocatable[c][i]; return `<td>${bar(q, a)} ${amount(c, q)}/${amount(c, a)} (${pct(q, a)})</td>`; }).join("") + "</tr>";
    }
    h += `</tbody></table></div><div class="pager"><button data-npage="-1" ${NT.page ? "" : "disabled"}>Previous</button><span>page ${NT.page + 1} of ${pages}</span><button data-npage="1" ${NT.page + 1 < pages ? "" : "disabled"}>Next</button></div>`;
    $("#node-table-wrap").innerHTML = h;
  }

  function renderNodeDetail() {
    const i = S.node, el = $("#node-detail");
    if (i < 0) { el.innerHTML = `<p class="hint">Choose a node on the map or in the table to see its resources and pods.</p>`; return; }
    const res = D.nodes.resources.filter((r) => D.nodes.allocatable[r][i] || D.nodes.requested[r][i]);
    const podsOn = [];
    for (let p = 0; p < D.pods.node.length; p++) if (D.pods.node[p] === i && str(D.pods.result[p]) === "scheduled") podsOn.push(p);
    const labels = Object.entries(D.nodes.labels[i] || {}).map(([k, v]) => `${k}=${v}`);
    let h = `<h3 id="node-detail-title">Node ${esc(D.nodes.name[i])}</h3><p>zone ${esc(str(D.nodes.zone[i]) || "–")}${D.nodes.unschedulable[i] ? " · <strong>cordoned</strong> (spec.unschedulable)" : ""}` +
      `${D.nodes.taints[i].length ? ` · taints: <code>${esc(D.nodes.taints[i].join(", "))}</code>` : ""}</p>`;
    h += `<div class="table-scroll"><table><caption>Requested / allocatable</caption><thead><tr><th scope="col">resource</th><th scope="col" class="num">requested</th><th scope="col" class="num">allocatable</th><th scope="col">use</th><th scope="col" class="num">%</th></tr></thead><tbody>` +
      res.map((r) => { const q = D.nodes.requested[r][i], a = D.nodes.allocatable[r][i]; return `<tr><th scope="row">${nameSpan(resLabel(r), CELL)}</th><td class="num">${amount(r, q)}</td><td class="num">${amount(r, a)}</td><td>${bar(q, a)}</td><td class="num">${pct(q, a)}</td></tr>`; }).join("") + "</tbody></table></div>";
    if (labels.length) h += `<details><summary>${plural(labels.length, "label")}</summary><p class="nodes-list">${esc(labels.join(", "))}</p></details>`;
    h += `<p>${plural(podsOn.length, "pod")} on the node${podsOn.length ? ":" : "."}</p>`;
    if (podsOn.length) h += `<ul class="nodes-list">${podsOn.slice(0, 200).map((p) => `<li>${podButton(p)}</li>`).join("")}</ul>${podsOn.length > 200 ? `<p class="note">and ${num(podsOn.length - 200)} more (filter the pod table by the node's name)</p>` : ""}`;
    el.innerHTML = h;
  }

  function selectNode(i, scroll) {
    S.node = i;
    const k = order.indexOf(i);
    if (k >= 0) S.cursor = k;
    renderMap();
    renderNodeDetail();
    if (scroll) $("#node-detail").scrollIntoView({ block: "nearest" });
  }

  function renderCluster() {
    const opts = D.nodes.resources.filter((r) => D.nodes.allocatable[r].some((v) => v > 0) || D.nodes.requested[r].some((v) => v > 0));
    if (!opts.includes(S.resource)) S.resource = opts[0] || "pods";
    $("#cluster .body").innerHTML =
      `<div class="controls"><label>Colour by <select id="resource">${opts.map((r) => `<option value="${esc(r)}"${r === S.resource ? " selected" : ""}>${esc(r)}</option>`).join("")}</select></label>` +
      `<div id="legend" class="legend" aria-label="Legend"></div></div>` +
      `<p id="map-help" class="sr-only"></p>` +
      `<div id="map" class="map zones" tabindex="0" role="group" aria-roledescription="cluster map" aria-describedby="map-help"></div>` +
      `<div class="pair"><div id="zone-bars-wrap"></div><div id="node-detail" class="panel" aria-live="polite"></div></div>` +
      `<div id="node-table-wrap"></div>`;
    groupZones();
    redrawCluster();
    $("#resource").addEventListener("change", (e) => { S.resource = e.target.value; redrawCluster(); });
    const map = $("#map");
    map.addEventListener("click", (e) => {
      const g = e.target.closest("g.node");
      if (g) selectNode(+g.dataset.node, true);
    });
    // The keyboard position shows once the map has the focus, on the first node.
    map.addEventListener("focus", () => {
      if (S.cursor >= 0 || !order.length) return;
      S.cursor = 0;
      drawCursor();
      announceCursor();
    });
    map.addEventListener("keydown", (e) => {
      if (!order.length) return;
      let k = Math.max(0, S.cursor);
      const zi = zones.findIndex((z) => z.nodes.includes(order[k]));
      const cols = zones[zi].cols;
      const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols }[e.key];
      if (step !== undefined) k += step;
      else if (e.key === "Home") k = 0;
      else if (e.key === "End") k = order.length - 1;
      else if (e.key === "Enter" || e.key === " ") { selectNode(order[k], false); e.preventDefault(); return; }
      else return;
      e.preventDefault();
      S.cursor = Math.max(0, Math.min(order.length - 1, k));
      drawCursor();
      announceCursor();
    });
    $("#node-table-wrap").addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (!b) return;
      if (b.dataset.nsort) { const k = b.dataset.nsort; NT.dir = NT.sort === k ? -NT.dir : (k === "use" ? -1 : 1); NT.sort = k; NT.page = 0; renderNodeTable(); $(`[data-nsort="${k}"]`).focus(); }
      else if (b.dataset.npage) { NT.page += +b.dataset.npage; renderNodeTable(); }
      else if (b.dataset.node) selectNode(+b.dataset.node, true);
    });
    renderNodeDetail();
  }

  function announceCursor() {
    const i = order[S.cursor], r = S.resource;
    announce(`${D.nodes.name[i]}, ${str(D.nodes.zone[i]) || "no zone"}, ${r} ${pct(D.nodes.requested[r][i], D.nodes.allocatable[r][i])}${nodeMarks(i).length ? ", " + nodeMarks(i).join(", ") : ""}`);
  }

  function redrawCluster() {
    renderLegend();
    renderMap();
    $("#map-help").textContent = mapDescription();
    renderZoneBars();
    renderNodeTable();
    renderNodeDetail();
  }

  // -- pending reasons ------------------------------------------------------------------------
  function renderPending() {
    const reasons = D.pendingReasons || [];
    const el = $("#pending .body");
    if (!reasons.length) { el.innerHTML = `<p>No pod is pending.</p>`; return; }
    const top = reasons.slice(0, 15), max = Math.max(...top.map((r) => r.pods));
    const rowH = 26, labelW = 430, W = 900, H = top.length * rowH + 4;
    let s = "";
    top.forEach((r, k) => {
      const w = Math.max(2, ((W - labelW - 60) * r.pods) / max), y = k * rowH + 2;
      const label = r.reason.length > 62 ? r.reason.slice(0, 60) + "…" : r.reason;
      s += `<text x="${labelW - 8}" y="${y + 16}" text-anchor="end" font-size="12">${esc(label)}</text>` +
        `<rect x="${labelW}" y="${y + 3}" width="${w}" height="${rowH - 8}" fill="#e69f00" stroke="#7a5300"/>` +
        `<text x="${labelW + w + 6}" y="${y + 16}" font-size="12">${num(r.pods)}</text>`;
    });
    const pendingTotal = D.pods.result.filter((x) => str(x) === "pending").length;
    el.innerHTML = `<p>${plural(pendingTotal, "pod")} pending. Each reason of the FailedScheduling message counts once per pod.</p>` +
      `<svg id="pending-chart" role="img" aria-labelledby="pending-chart-t" width="100%" viewBox="0 0 ${W} ${H}" style="max-width:${W}px"><title id="pending-chart-t">Bar chart of pending pods by FailedScheduling reason; the table below has the same figures.</title>${s}</svg>` +
      `<div class="table-scroll"><table id="pending-table"><caption>Pending pods by reason</caption><thead><tr><th scope="col">reason</th><th scope="col" class="num">pods</th><th scope="col" class="num">nodes (summed over pods)</th><th scope="col"><span class="sr-only">action</span></th></tr></thead><tbody>` +
      reasons.slice(0, 100).map((r) => `<tr><td class="msg">${esc(r.reason)}</td><td class="num">${num(r.pods)}</td><td class="num">${num(r.nodes)}</td><td><button class="link" data-reason="${esc(r.reason)}">show these pods</button></td></tr>`).join("") +
      `</tbody></table></div>${reasons.length > 100 ? `<p class="note">and ${num(reasons.length - 100)} more reasons</p>` : ""}`;
    el.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-reason]");
      if (!b) return;
      PT.q = b.dataset.reason; PT.result = "pending"; PT.page = 0;
      $("#pod-search").value = PT.q; $("#pod-result").value = "pending";
      renderPodRows();
      $("#pods").scrollIntoView();
      $("#pod-search").focus();
    });
  }

  // -- pods ---------------------------------------------------------------------------------
  const PT = { q: "", result: "", sort: "pod", dir: 1, page: 0 };
  let searchKeys = null;
  function podKey(p) { return `${str(D.pods.namespace[p])}/${D.pods.name[p]}`; }
  // A pod's button; in a table cell its namespace and name are shortened each on its own,
  // the namespace more: the name tells the pods of a table apart.
  function podButton(p, short) {
    const text = short ? `${shorten(str(D.pods.namespace[p]), 12)}/${shorten(D.pods.name[p], CELL)}` : podKey(p);
    return `<button class="link name" data-pod="${p}" title="${esc(podKey(p))}">${esc(text)}</button>`;
  }
  function nodeName(p) { const n = D.pods.node[p]; return n >= 0 ? D.nodes.name[n] : ""; }

  function renderPods() {
    const el = $("#pods .body");
    el.innerHTML = `<div class="controls"><label>Search <input id="pod-search" type="search" placeholder="name, node or message" size="40"></label>` +
      `<label>Result <select id="pod-result"><option value="">any</option>${RESULTS.map((r) => `<option>${r}</option>`).join("")}</select></label>` +
      `<span id="pod-count" aria-live="polite"></span></div><div id="pod-table-wrap"></div>`;
    let timer = null;
    $("#pod-search").addEventListener("input", (e) => {
      clearTimeout(timer);
      timer = setTimeout(() => { PT.q = e.target.value; PT.page = 0; renderPodRows(); }, 120);
    });
    $("#pod-result").addEventListener("change", (e) => { PT.result = e.target.value; PT.page = 0; renderPodRows(); });
    $("#pod-table-wrap").addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (!b) return;
      if (b.dataset.sort) { const k = b.dataset.sort; PT.dir = PT.sort === k ? -PT.dir : 1; PT.sort = k; PT.page = 0; renderPodRows(); $(`[data-sort="${k}"]`).focus(); }
      else if (b.dataset.page) { PT.page += +b.dataset.page; renderPodRows(); }
    });
    renderPodRows();
  }

  function filteredPods() {
    const n = D.pods.name.length, q = PT.q.trim().toLowerCase(), out = [];
    if (q && !searchKeys) {
      searchKeys = new Array(n);
      for (let p = 0; p < n; p++) searchKeys[p] = `${podKey(p)} ${nodeName(p)} ${str(D.pods.profile[p]) || ""} ${str(D.pods.message[p]) || ""}`.toLowerCase();
    }
    for (let p = 0; p < n; p++) {
      if (PT.result && str(D.pods.result[p]) !== PT.result) continue;
      if (q && !searchKeys[p].includes(q)) continue;
      out.push(p);
    }
    const key = {
      pod: podKey, profile: (p) => str(D.pods.profile[p]) || "", result: (p) => str(D.pods.result[p]),
      node: nodeName, priority: (p) => D.pods.priority[p] ?? 0, attempts: (p) => D.pods.attempts[p],
    }[PT.sort];
    if (PT.sort !== "pod" || PT.dir !== 1) {
      // Ties keep the report's order (namespace, name) whatever the direction.
      const keys = new Map(out.map((p) => [p, key(p)]));
      out.sort((a, b) => compare(keys.get(a), keys.get(b)) * PT.dir || a - b);
    }
    return out;
  }

  function renderPodRows() {
    const rows = filteredPods();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    PT.page = Math.max(0, Math.min(PT.page, pages - 1));
    $("#pod-count").textContent = `${plural(rows.length, "pod")} shown of ${num(D.pods.name.length)}`;
    const th = (k, label, cls) => `<th scope="col"${cls ? ` class="${cls}"` : ""} aria-sort="${PT.sort === k ? (PT.dir > 0 ? "ascending" : "descending") : "none"}"><button class="sort" data-sort="${k}">${label}</button></th>`;
    let h = `<div class="table-scroll"><table id="pod-table"><caption class="sr-only">Pods (sortable: choose a column heading)</caption><thead><tr>${th("pod", "pod")}${th("profile", "profile")}${th("result", "result")}${th("node", "node")}${th("priority", "priority", "num")}${th("attempts", "attempts", "num")}<th scope="col">message</th></tr></thead><tbody>`;
    for (const p of rows.slice(PT.page * PAGE, PT.page * PAGE + PAGE)) {
      const msg = str(D.pods.message[p]) || "";
      h += `<tr data-pod-row="${p}"><th scope="row">${podButton(p, true)}</th><td>${nameSpan(str(D.pods.profile[p]) || "–", CELL)}</td><td>${badge(str(D.pods.result[p]))}</td><td>${nameSpan(nodeName(p) || "–", CELL)}</td>` +
        `<td class="num">${D.pods.priority[p] ?? "–"}</td><td class="num">${D.pods.attempts[p]}</td><td class="msg">${esc(msg.length > 160 ? msg.slice(0, 158) + "…" : msg)}</td></tr>`;
    }
    h += `</tbody></table></div><div class="pager"><button data-page="-1" ${PT.page ? "" : "disabled"}>Previous</button><span>page ${PT.page + 1} of ${pages}</span><button data-page="1" ${PT.page + 1 < pages ? "" : "disabled"}>Next</button></div>`;
    $("#pod-table-wrap").innerHTML = h;
  }

  // -- one pod's story ------------------------------------------------------------------------
  function nodeLink(name, n) {
    const i = nodeIndex.get(name);
    return i === undefined ? nameSpan(name, n) : `<button class="link name" data-node="${i}" title="${esc(name)}">${esc(shorten(name, n))}</button>`;
  }
  let nodeIndex = new Map();

  function showPod(p, focus, push) {
    S.pod = p;
    const st = (D.stories || {})[String(p)] || {};
    const result = str(D.pods.result[p]), node = nodeName(p);
    let h = `<h3 id="story-title" tabindex="-1">Pod ${esc(podKey(p))}</h3><dl class="panel">` +
      `<div>result: ${badge(result)}</div><div>node: <strong id="story-node">${node ? nodeLink(node) : "none"}</strong></div>` +
      `<div>profile: ${esc(str(D.pods.profile[p]) || "–")} · priority ${D.pods.priority[p] ?? "–"} · ${plural(D.pods.attempts[p], "attempt")}</div>` +
      (str(D.pods.nominated[p]) ? `<div>nominated node: ${nodeLink(str(D.pods.nominated[p]))}</div>` : "") +
      (str(D.pods.preemptedBy[p]) ? `<div>preempted by: ${esc(str(D.pods.preemptedBy[p]))}</div>` : "") +
      (str(D.pods.message[p]) ? `<div class="msg">message: ${esc(str(D.pods.message[p]))}</div>` : "") + "</dl>";
    h += historyTable(st.history || []);
    h += extenderList(st.history || []);
    if (st.filters || st.feasible) h += filterTable(st);
    else if (st.history && st.history.length) h += `<p class="note">Filter verdicts and scores were not kept for this pod${D.meta.detail === "full" ? ` (the report keeps them for ${num(D.meta.explainedPods)} pods; name it with <code>--explain</code>)` : " (the run used --detail summary)"}.</p>`;
    if (st.scores) h += scoreTable(st.scores, node || (st.history && st.history.length ? st.history[st.history.length - 1].node : null));
    else if (st.feasible && st.feasible.count === 1) h += `<p>One node passed the filters: it was chosen without scoring, as upstream does.</p>`;
    if (st.preemption) h += preemptionBlock(st.preemption);
    $("#story .body").innerHTML = h;
    // A pod opened on the page becomes a history entry, so Back returns to the story before;
    // one opened from the address (a link, Back, Forward) already has its entry.
    const hash = `#pod=${encodeURIComponent(podKey(p))}`;
    if (push && location.hash !== hash) history.pushState(null, "", hash);
    if (focus) { $("#story").scrollIntoView(); $("#story-title").focus({ preventScroll: true }); }
  }

  function historyTable(hist) {
    if (!hist.length) return `<p>No scheduling attempt${D.pods.attempts[S.pod] ? "" : " (the pod was given bound, refused, or left to another scheduler)"}.</p>`;
    return `<div class="table-scroll"><table id="story-attempts"><caption>Attempts</caption><thead><tr><th scope="col" class="num">#</th><th scope="col" class="num">started</th><th scope="col">result</th><th scope="col">node</th><th scope="col" class="num">nodes</th><th scope="col" class="num">evaluated</th><th scope="col" class="num">feasible</th><th scope="col">nominated</th><th scope="col">message</th></tr></thead><tbody>` +
      hist.map((a) => `<tr><td class="num">${a.attempt}</td><td class="num">${secs(a.startedAt)}</td><td>${badge(a.result)}</td><td>${a.node ? nodeLink(a.node, CELL) : "–"}</td><td class="num">${num(a.allNodes)}</td><td class="num">${num(a.evaluatedNodes)}</td><td class="num">${num(a.feasibleNodes)}</td><td>${a.nominatedNode ? nodeLink(a.nominatedNode, CELL) : "–"}</td><td class="msg">${esc(a.message)}</td></tr>`).join("") +
      "</tbody></table></div>";
  }

  function extenderList(hist) {
    const calls = hist.length ? hist[hist.length - 1].extenders || [] : [];
    if (!calls.length) return "";
    return `<ul id="story-extenders" aria-label="Extenders in the last attempt">` + calls.map((c) =>
      `<li>${esc(c.extender)} ${esc(c.verb)}: ${esc(c.result)}` +
      Object.entries(c.failedNodes || {}).map(([n, m]) => `<br>${nodeLink(n)}: ${esc(m)}`).join("") + "</li>").join("") + "</ul>";
  }

  function nodeNames(names, count) {
    const shown = names.map((n) => nodeLink(n, CELL)).join(", ");
    return count > names.length ? `${shown} <span class="note">(+${num(count - names.length)} more)</span>` : shown;
  }

  function filterTable(st) {
    const groups = st.filters || [];
    let h = `<div class="table-scroll"><table id="story-filters"><caption>Filter verdicts in the last attempt, by plugin and reason (the first plugin that rejects a node is named)</caption><thead><tr><th scope="col">plugin</th><th scope="col">verdict</th><th scope="col">reason</th><th scope="col" class="num">nodes</th><th scope="col">which</th></tr></thead><tbody>`;
    for (const g of groups) {
      const code = g.code === "UnschedulableAndUnresolvable" ? `${g.code} <span class="note">(preemption would not help)</span>` : esc(g.code);
      h += `<tr><td>${esc(g.plugin || "–")}</td><td>${code}</td><td class="msg">${esc(g.reasons.join("; "))}</td><td class="num">${num(g.count)}</td><td class="nodes-list">${nodeNames(g.nodes, g.count)}</td></tr>`;
    }
    if (st.feasible) h += `<tr><td>all filters</td><td>passed</td><td>feasible</td><td class="num">${num(st.feasible.count)}</td><td class="nodes-list">${nodeNames(st.feasible.nodes, st.feasible.count)}</td></tr>`;
    if (st.notEvaluated) h += `<tr><td>–</td><td>not evaluated</td><td>the search stopped early (percentageOfNodesToScore found enough feasible nodes, or the nominated node fit)</td><td class="num">${num(st.notEvaluated)}</td><td></td></tr>`;
    return h + "</tbody></table></div>";
  }

  function scoreTable(sc, chosen) {
    const P = sc.plugins;
    const rows = sc.rows.slice().sort((a, b) => a.rank - b.rank || (a.node < b.node ? -1 : 1));
    let h = `<h3>Scores in the last attempt: the ${rows.length} best of ${plural(sc.feasible, "feasible node")}${chosen ? ` against the chosen node ${esc(chosen)}` : ""}</h3>`;
    // Stacked bars of each candidate's weighted scores (the table below is the text version).
    const labelW = 150, W = 900, rowH = 22, maxT = Math.max(1, ...rows.map((r) => r.total)), H = rows.length * rowH + 30;
    let s = "";
    rows.forEach((r, k) => {
      let x = labelW;
      const y = k * rowH;
      s += `<text x="${labelW - 6}" y="${y + 15}" text-anchor="end" font-size="12"${r.node === chosen ? ' font-weight="bold"' : ""}>${esc(shorten(r.node, 18))}${r.node === chosen ? " ✓" : ""}</text>`;
      P.forEach((pl, j) => {
        const w = ((W - labelW - 60) * r.normalized[j] * pl.weight) / maxT;
        if (w > 0) s += `<rect x="${x}" y="${y + 3}" width="${w}" height="${rowH - 6}" fill="${CATEGORICAL[j % CATEGORICAL.length]}" stroke="#fff" stroke-width="0.5"><title>${esc(pl.plugin)}: ${r.normalized[j] * pl.weight}</title></rect>`;
        x += w;
      });
      s += `<text x="${x + 5}" y="${y + 15}" font-size="12">${r.total}</text>`;
    });
    const legend = P.map((pl, j) => `<span><span class="sw" style="background:${CATEGORICAL[j % CATEGORICAL.length]}"></span>${esc(pl.plugin)} ×${pl.weight}</span>`).join("");
    h += `<div class="legend">${legend}</div><svg id="score-chart" role="img" aria-labelledby="score-chart-t" width="100%" viewBox="0 0 ${W} ${H}" style="max-width:${W}px"><title id="score-chart-t">Stacked bars of each candidate node's weighted score per plugin; the table below has the figures.</title>${s}</svg>`;
    h += `<div class="table-scroll"><table id="story-scores"><caption>Score per plugin: raw → normalised (0–100) × weight = weighted</caption><thead><tr><th scope="col" class="num">rank</th><th scope="col">node</th><th scope="col" class="num">total</th>` +
      P.map((pl) => `<th scope="col" class="num">${esc(pl.plugin)} <span class="note">×${pl.weight}</span></th>`).join("") + "</tr></thead><tbody>";
    for (const r of rows) {
      h += `<tr data-node="${esc(r.node)}"${r.node === chosen ? ' class="chosen"' : ""}><td class="num">${r.rank}</td><td>${nodeLink(r.node, CELL)}${r.node === chosen ? " <strong>(chosen)</strong>" : ""}</td><td class="num total">${r.total}</td>` +
        P.map((pl, j) => `<td class="num"><span class="note">${r.raw[j]} →</span> ${r.normalized[j]} <span class="note">→</span> <strong>${r.normalized[j] * pl.weight}</strong></td>`).join("") + "</tr>";
    }
    h += "</tbody></table></div>";
    const ties = rows.filter((r) => r.rank === 1).length;
    if (ties > 1 && chosen) h += `<p class="note">${ties} nodes share the best total; the scheduler picked ${esc(chosen)} among them at random (reservoir sampling, seeded by --seed), as upstream does.</p>`;
    return h;
  }

  function preemptionBlock(pr) {
    let h = `<div id="story-preemption"><h3>Preemption</h3>`;
    if (pr.victims.length) h += `<p>${plural(pr.victims.length, "victim")} deleted to make room:</p><ul>${pr.victims.map((v) => `<li>${esc(v)}</li>`).join("")}</ul>`;
    if (pr.chosen) h += `<p>Nominated node: <strong>${nodeLink(pr.chosen)}</strong>${pr.decidedBy ? `, decided by <strong id="story-decided-by">${esc(pr.decidedBy)}</strong>` : ""}.</p>`;
    if (pr.candidates.length) {
      h += `<div class="table-scroll"><table><caption>Candidate nodes of the last preemption attempt</caption><thead><tr><th scope="col">node</th><th scope="col">victims it would need</th><th scope="col" class="num">PDB violations</th></tr></thead><tbody>` +
        pr.candidates.map((c) => `<tr${c.node === pr.chosen ? ' class="chosen"' : ""}><td>${nodeLink(c.node, CELL)}</td><td class="msg">${esc(c.victims.join(", "))}</td><td class="num">${c.pdbViolations}</td></tr>`).join("") +
        `</tbody></table></div>${pr.moreCandidates ? `<p class="note">and ${num(pr.moreCandidates)} more candidates</p>` : ""}`;
    }
    if (pr.message) h += `<p class="msg">PostFilter: ${esc(pr.message)}</p>`;
    return h + "</div>";
  }

  // -- timeline -----------------------------------------------------------------------------
  function renderTimeline() {
    const ev = D.timeline || [], binds = D.bindings || [];
    const raw = D.timelineSteps || [], steps = Array.isArray(raw) ? raw : (raw.steps || []);
    const el = $("#timeline .body");
    const T = Math.max(D.meta.virtualTimeSeconds || 0, ...ev.map((e) => e.time), binds.length ? binds[binds.length - 1] : 0) || 1;
    const W = 900, L = 50, R = 20, H = 150, plotH = 90;
    const x = (t) => L + ((W - L - R) * t) / T;
    let s = `<line x1="${L}" y1="${plotH + 10}" x2="${W - R}" y2="${plotH + 10}" stroke="#333"/>`;
    for (let k = 0; k <= 5; k++) {
      const t = (T * k) / 5;
      s += `<line x1="${x(t)}" y1="${plotH + 10}" x2="${x(t)}" y2="${plotH + 15}" stroke="#333"/><text x="${x(t)}" y="${plotH + 28}" font-size="11" text-anchor="middle">${+t.toFixed(1)} s</text>`;
    }
    if (binds.length) {
      // Pods bound so far, as a step line (sampled to at most 400 steps).
      const n = binds.length, stepN = Math.max(1, Math.floor(n / 400)), y = (k) => plotH + 10 - (plotH * k) / n;
      let d = `M${x(0)} ${y(0)}`;
      for (let k = stepN - 1; k < n; k += stepN) d += ` H${x(binds[k])} V${y(k + 1)}`;
      d += ` H${x(binds[n - 1])} V${y(n)} H${x(T)}`;
      s += `<path d="${d}" fill="none" stroke="#0072b2" stroke-width="2"/><text x="${L - 4}" y="14" font-size="11" text-anchor="end">${num(n)}</text><text x="${L - 4}" y="${plotH + 10}" font-size="11" text-anchor="end">0</text>`;
    }
    for (const e of ev) {
      const cx = x(e.time), t = `${e.reason} ${e.object} at ${secs(e.time)}`;
      s += e.reason === "Preempted"
        ? `<circle cx="${cx}" cy="${plotH / 2 + 10}" r="5" fill="#cc79a7" stroke="#000"><title>${esc(t)}</title></circle>`
        : `<path d="M${cx} ${plotH / 2 + 2} l7 8 l-7 8 l-7 -8 Z" fill="#d55e00" stroke="#000"><title>${esc(t)}</title></path>`;
    }
    const pre = ev.filter((e) => e.reason === "Preempted").length, evi = ev.length - pre;
    const desc = `Timeline over ${secs(T)} of virtual time: ${plural(binds.length, "pod")} bound by the scheduler (blue line, cumulative), ${plural(pre, "preemption")} (pink circles), ${plural(evi, "eviction")} (vermillion diamonds).`;
    let h = `<p>${esc(desc)}</p><svg id="timeline-chart" role="img" aria-labelledby="timeline-t" width="100%" viewBox="0 0 ${W} ${H}" style="max-width:${W}px"><title id="timeline-t">${esc(desc)} The table below lists the events.</title>${s}</svg>`;
    if (ev.length) {
      h += `<div class="table-scroll"><table id="timeline-table"><caption>Preemptions and evictions</caption><thead><tr><th scope="col" class="num">time</th><th scope="col">reason</th><th scope="col">object</th><th scope="col">message</th></tr></thead><tbody>` +
        ev.slice(0, 300).map((e) => `<tr><td class="num">${secs(e.time)}</td><td>${esc(e.reason)}</td><td>${esc(e.object)}</td><td class="msg">${esc(e.message)}</td></tr>`).join("") +
        `</tbody></table></div>${ev.length > 300 ? `<p class="note">and ${num(ev.length - 300)} more events</p>` : ""}`;
    } else {
      h += `<p>No preemption or eviction happened.</p>`;
    }
    if (steps.length) {
      h += `<h3>Timeline steps</h3><ol id="timeline-steps">${steps.map((st) => `<li>${esc(Object.entries(typeof st === "object" && st ? st : { step: st }).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · "))}</li>`).join("")}</ol>`;
    }
    el.innerHTML = h;
  }

  // -- deschedule ---------------------------------------------------------------------------
  // A deschedule report (kubesched deschedule --report) adds what its policy evicted; the
  // rest of the page is the cluster after the evicted pods were re-placed.
  function renderDeschedule() {
    const R = D.deschedule;
    if (!R) return;
    $("#deschedule").hidden = false;
    $("#nav-deschedule").hidden = false;
    $("#made-by").textContent = "kubesched deschedule --report";
    const byKey = new Map(D.pods.name.map((_, p) => [podKey(p), p]));
    const pod = (key) => (byKey.has(key) ? podButton(byKey.get(key), true) : nameSpan(key, CELL));
    const evicted = R.evictions.filter((e) => e.evicted).length;
    const c = R.pods;
    const cards = [
      ["evicted", num(evicted), "deschedule-evicted"], ["refused", num(R.evictions.length - evicted), "deschedule-refused"],
      ["bound", `${num(c.boundBefore)} → ${num(c.boundAfter)}`], ["pending", `${num(c.pendingBefore)} → ${num(c.pendingAfter)}`],
    ];
    let h = `<div class="cards">${cards.map(([k, v, id]) =>
      `<div class="card"><span class="v"${id ? ` id="${id}"` : ""}>${esc(v)}</span><span class="k">${esc(k)}</span></div>`).join("")}</div>`;
    h += `<div class="table-scroll"><table id="deschedule-strategies"><caption>Strategies: the evictions each wants on the placement before and after</caption><thead><tr>` +
      `<th scope="col">profile</th><th scope="col">strategy</th><th scope="col" class="num">evicted</th><th scope="col" class="num">refused</th>` +
      `<th scope="col" class="num">wanted before</th><th scope="col" class="num">wanted after</th><th scope="col">goal met</th></tr></thead><tbody>` +
      R.strategies.map((s) => `<tr><td>${nameSpan(s.profile, CELL)}</td><th scope="row">${esc(s.strategy)}</th><td class="num">${num(s.evictions)}</td>` +
        `<td class="num">${num(s.refused)}</td><td class="num">${num(s.violationsBefore)}</td><td class="num">${num(s.violationsAfter)}</td>` +
        `<td>${s.goalMet ? "yes" : "<strong>no</strong>"}</td></tr>`).join("") + "</tbody></table></div>";
    for (const s of R.strategies) {
      const u = s.utilization;
      if (!u) continue;
      const th = (t) => Object.entries(t).map(([r, v]) => `${r} ${v}`).join(", ");
      const names = (n) => (n.length ? n.join(", ") : "none");
      h += `<p class="panel deschedule-goal"><strong>${esc(s.strategy)}</strong>: under all of [${esc(th(u.low))}]: ${esc(names(u.underBefore))} → ${esc(names(u.underAfter))}; ` +
        `over any of [${esc(th(u.high))}]: ${esc(names(u.overBefore))} → ${esc(names(u.overAfter))}</p>`;
    }
    if (R.evictions.length) {
      h += `<div class="table-scroll"><table id="deschedule-evictions"><caption>Evictions and where each pod went</caption><thead><tr>` +
        `<th scope="col">pod</th><th scope="col">node</th><th scope="col">strategy</th><th scope="col">reason</th><th scope="col">went to</th></tr></thead><tbody>` +
        R.evictions.map((e) => `<tr${e.evicted ? "" : ' class="refused"'}><td>${pod(e.pod)}</td><td>${nodeLink(e.node, CELL)}</td><td>${esc(e.strategy)}</td>` +
          `<td class="msg">${esc(e.reason)}</td><td class="msg">${e.replacement ? `${pod(e.replacement)} ` : ""}${esc(e.replacementNode ? `on ${e.replacementNode}` : e.outcome)}</td></tr>`).join("") +
        "</tbody></table></div>";
    } else {
      h += "<p>The policy evicted no pod.</p>";
    }
    h += `<div class="table-scroll"><table id="deschedule-nodes"><caption>Node utilisation (requests), before → after</caption><thead><tr>` +
      `<th scope="col">node</th><th scope="col" class="num">cpu %</th><th scope="col" class="num">memory %</th><th scope="col" class="num">pods %</th></tr></thead><tbody>` +
      R.nodes.map((n) => `<tr><th scope="row">${nodeLink(n.node, CELL)}</th>${["cpu", "memory", "pods"].map((r) =>
        `<td class="num">${esc(`${+(n.before[r] || 0).toFixed(2)} → ${+(n.after[r] || 0).toFixed(2)}`)}</td>`).join("")}</tr>`).join("") +
      "</tbody></table></div>";
    if (R.notices && R.notices.length) {
      h += `<h3>Notices</h3><ul id="deschedule-notices">${R.notices.map((n) => `<li class="msg">${esc(n)}</li>`).join("")}</ul>`;
    }
    $("#deschedule .body").innerHTML = h;
  }

  // -- wiring -------------------------------------------------------------------------------
  async function unpack() {
    const text = $("#kubesched-data").textContent.trim();
    const bin = atob(text), bytes = new Uint8Array(bin.length);
    for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function podFromHash() {
    const m = /^#pod=(.+)$/.exec(location.hash);
    if (!m) return -1;
    const key = decodeURIComponent(m[1]);
    for (let p = 0; p < D.pods.name.length; p++) if (podKey(p) === key) return p;
    return -1;
  }

  async function main() {
    try {
      D = await unpack();
    } catch (err) {
      const el = $("#load-error");
      el.hidden = false;
      el.textContent = `The report's data could not be unpacked (${err}). Open it in a current browser (Chrome, Edge, Firefox 113+, Safari 16.4+).`;
      $("#meta").textContent = "";
      return;
    }
    nodeIndex = new Map(D.nodes.name.map((n, i) => [n, i]));
    renderMeta();
    renderSummary();
    renderCluster();
    renderPending();
    renderPods();
    renderTimeline();
    renderDeschedule();
    // Pod and node buttons anywhere on the page open the pod's story or the node's details.
    document.body.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-pod], button[data-node]");
      if (!b || b.closest("#node-table-wrap")) return;
      if (b.dataset.pod !== undefined) showPod(+b.dataset.pod, true, true);
      else { selectNode(+b.dataset.node, false); $("#cluster").scrollIntoView(); $("#node-detail").focus(); }
    });
    $("#node-detail").tabIndex = -1;
    // A link to a pod (report.html#pod=ns/name) opens its story and scrolls to it, on load
    // and on Back and Forward.
    const p = podFromHash();
    if (p >= 0) showPod(p, true, false);
    window.addEventListener("popstate", () => {
      const q = podFromHash();
      if (q >= 0 && q !== S.pod) showPod(q, true, false);
    });
    document.body.dataset.ready = "true";
  }

  main();
})();
