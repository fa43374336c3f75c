// toposched dashboard: one page over the daemon's REST API (docs/api.md). Views by URL hash:
// #/cluster, #/node/NAME, #/queue, #/job/N, #/report. Live views poll every 2 s; only their
// content is replaced, so inputs keep their text and focus. All text enters the page through
// textContent (never as markup), and changes send the token typed into the header.
'use strict';

(() => {
  const POLL_MS = 2000;
  const AGGREGATE_ABOVE = 256; // nodes: above this, leaves show a bar until opened
  const STATES = ['free', 'job', 'kubernetes', 'reserved', 'drained', 'unhealthy'];
  const STATE_LABEL = {
    free: 'free', job: 'running job', kubernetes: 'held by Kubernetes', reserved: 'reserved',
    drained: 'drained', unhealthy: 'unhealthy',
  };
  const NVL_COLOURS = ['#0a8f8f', '#c2185b', '#6d4c41', '#2e7d32', '#5e35b1', '#ef6c00'];
  const S = {
    token: sessionStorage.getItem('toposched.token') || '',
    topo: null, route: null, view: null, content: null, renders: 0, busy: false,
    queue: { filter: '', state: '', sort: 'id', dir: 1 },
    expanded: new Set(), report: null, reportName: '',
  };

  // ---- DOM helpers ----
  function put(e, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.setAttribute('class', v);
      else if (k === 'text') e.textContent = String(v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const el = (tag, attrs, ...kids) => put(document.createElement(tag), attrs, kids);
  const sv = (tag, attrs, ...kids) =>
    put(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, kids);
  const fmtMs = (x) => (x === null || x === undefined ? '—' : Number(x).toFixed(3));
  function fmtS(s) {
    if (s === null || s === undefined || !isFinite(s)) return '—';
    if (s < 120) return s.toFixed(1) + ' s';
    if (s < 7200) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(2) + ' h';
  }
  const jobNum = (name) => Number(String(name).replace(/^job-/, ''));
  const jobLink = (name) => el('a', { href: '#/job/' + jobNum(name), text: name });
  const card = (k, v, id) => el('div', { class: 'card' }, el('div', { class: 'v', id, text: v }),
    el('div', { class: 'k', text: k }));

  // ---- the API ----
  async function api(path, opts) {
    const o = Object.assign({ headers: {} }, opts || {});
    if (S.token) o.headers.Authorization = 'Bearer ' + S.token;
    const r = await fetch(path, o);
    const text = await r.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = { message: text }; }
    if (!r.ok) {
      const err = new Error((body && body.message) || 'HTTP ' + r.status);
      err.status = r.status;
      throw err;
    }
    return body;
  }
  async function change(path, body, out) {
    out.className = 'muted';
    out.textContent = 'sending…';
    try {
      await api(path, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body || {}),
      });
      out.className = 'ok';
      out.textContent = 'done';
      refresh();
    } catch (e) {
      out.className = 'error';
      out.textContent = 'refused' + (e.status ? ' (HTTP ' + e.status + ')' : '') + ': ' + e.message;
    }
  }

  // ---- GPU states and the network tree (cluster and job views) ----
  function nodeStates(nodes) {
    const m = new Map();
    for (const n of nodes) m.set(n.name, n);
    return m;
  }
  function legend() {
    return el('div', { class: 'legend', id: 'legend' },
      STATES.map((s) => el('span', {}, el('i', { class: 'sw st-' + s }), STATE_LABEL[s])),
      el('span', {}, el('i', { class: 'sw st-free deg' }), 'degraded link'));
  }
  function countStates(nodeIdx, byName) {
    const c = Object.fromEntries(STATES.map((s) => [s, 0]));
    for (const i of nodeIdx) {
      const n = byName.get(S.topo.nodes[i].name);
      if (n) for (const g of n.gpu_states) c[g.state] = (c[g.state] || 0) + 1;
    }
    return c;
  }
  function descendants(d, memo) {
    if (memo.has(d)) return memo.get(d);
    const dom = S.topo.domains[d];
    // A domain's `nodes` are its direct nodes; a domain may have children and nodes both.
    let out = dom.nodes.slice();
    for (const c of dom.children || []) out = out.concat(descendants(c, memo));
    memo.set(d, out);
    return out;
  }
  function topoIndex() {
    if (!S.topoIndex || S.topoIndex.topo !== S.topo) {
      S.topoIndex = { topo: S.topo, map: new Map(S.topo.nodes.map((n, i) => [n.name, i])) };
    }
    return S.topoIndex.map;
  }
  function nodeBox(name, byName, hl) {
    const tn = S.topo.nodes[topoIndex().get(name)];
    const n = byName.get(name);
    const box = el('div', { class: 'node', 'data-node': name, 'data-free': n ? n.free : 0 });
    const gpus = el('div', { class: 'gpus' });
    for (const g of n ? n.gpu_states : []) {
      let cls = 'gpu st-' + g.state;
      if (g.health === 'degraded' || g.nvlink_health !== 'healthy') cls += ' deg';
      if (hl && hl.gpus.has(name + '/' + g.gpu)) cls += ' st-hl';
      gpus.append(el('div', { class: cls, 'data-gpu': g.gpu }));
    }
    const lines = [name, 'profile ' + (n ? n.profile : '?'),
      (n ? n.free : 0) + ' of ' + (n ? n.gpus : 0) + ' GPUs free'];
    if (n && n.drained) lines.push('drained');
    if (n && n.health !== 'healthy') lines.push('health ' + n.health);
    if (tn && tn.nvlink_domain >= 0) {
      const d = S.topo.nvlink_domains[tn.nvlink_domain];
      lines.push('NVLink domain ' + d.name);
      box.classList.add('nvl');
      box.style.setProperty('--nvl', NVL_COLOURS[tn.nvlink_domain % NVL_COLOURS.length]);
    }
    if (n && n.jobs.length) lines.push('jobs ' + n.jobs.join(', '));
    box.title = lines.join('\n');
    box.append(el('span', { class: 'nname', text: name }), gpus);
    box.addEventListener('click', () => { location.hash = '#/node/' + encodeURIComponent(name); });
    return box;
  }
  function aggregateBar(d, idx, byName) {
    const c = countStates(idx, byName);
    const total = STATES.reduce((a, s) => a + c[s], 0) || 1;
    const bar = el('div', { class: 'agg', 'data-domain': d.name, title: 'open ' + d.name });
    for (const s of STATES) {
      if (!c[s]) continue;
      const seg = el('div', { class: 'st-' + s });
      seg.style.width = (100 * c[s] / total).toFixed(2) + '%';
      bar.append(seg);
    }
    bar.addEventListener('click', () => { S.expanded.add(d.name); refresh(); });
    return el('div', {}, bar, el('div', {
      class: 'aggline',
      text: idx.length + ' nodes · ' + c.free + ' GPUs free · ' + (c.job + c.kubernetes + c.reserved) + ' busy',
    }));
  }
  // Nodes of one domain: each drawn, or (above AGGREGATE_ABOVE nodes, until opened, unless the
  // highlighted job is there) one bar of their GPU states.
  function nodeGroup(d, idx, byName, hl, many) {
    const touched = hl && idx.some((i) => hl.nodes.has(S.topo.nodes[i].name));
    if (many && !S.expanded.has(d.name) && !touched) return aggregateBar(d, idx, byName);
    return el('div', { class: 'nodes' }, idx.map((i) => nodeBox(S.topo.nodes[i].name, byName, hl)));
  }
  function renderDomain(di, byName, hl, memo, many) {
    const d = S.topo.domains[di];
    const idx = descendants(di, memo);
    const c = countStates(idx, byName);
    const total = STATES.reduce((a, s) => a + c[s], 0);
    const level = S.topo.levels[d.level] ? S.topo.levels[d.level].name : 'level ' + d.level;
    const box = el('div', {
      class: 'domain' + (d.parent < 0 ? ' lvl-top' : ''), 'data-domain-box': d.name,
    }, el('div', { class: 'dlabel', text: d.name + ' · ' + level + ' · ' + c.free + '/' + total + ' GPUs free' }));
    if ((d.children || []).length) {
      box.append(el('div', { class: 'children' },
        d.children.map((ci) => renderDomain(ci, byName, hl, memo, many))));
    }
    if (d.nodes.length) box.append(nodeGroup(d, d.nodes, byName, hl, many));
    return box;
  }
  function renderTree(nodes, hl) {
    const byName = nodeStates(nodes);
    const many = S.topo.nodes.length > AGGREGATE_ABOVE;
    const roots = S.topo.domains.map((d, i) => [d, i]).filter(([d]) => d.parent < 0).map(([, i]) => i);
    const memo = new Map();
    const tree = el('div', { id: 'tree', class: hl ? 'hl-mode' : '' });
    if (!roots.length) {
      tree.append(el('div', { class: 'nodes' }, S.topo.nodes.map((n) => nodeBox(n.name, byName, hl))));
    } else {
      for (const r of roots) tree.append(renderDomain(r, byName, hl, memo, many));
      // Nodes in no domain (a cluster may leave some out of the network tree).
      const loose = S.topo.nodes.map((n, i) => [n, i]).filter(([n]) => n.domain < 0).map(([, i]) => i);
      if (loose.length) {
        const d = { name: '(no network domain)' };
        tree.append(el('div', { class: 'domain lvl-top', 'data-domain-box': d.name },
          el('div', { class: 'dlabel', text: d.name + ' · ' + loose.length + ' nodes' }), nodeGroup(d, loose, byName, hl, many)));
      }
    }
    return tree;
  }
  function nvlinkLegend() {
    if (!S.topo.nvlink_domains.length) return null;
    return el('div', { class: 'legend' }, S.topo.nvlink_domains.map((d, i) => {
      const sw = el('i', { class: 'sw' });
      sw.style.background = NVL_COLOURS[i % NVL_COLOURS.length];
      return el('span', {}, sw, 'NVLink domain ' + d.name + ' (' + d.nodes.length + ' nodes, ' +
        d.gpu_bandwidth_gbps + ' Gbit/s per GPU)');
    }));
  }

  // ---- views: each has setup (built once per visit) and update (every poll) ----
  const VIEWS = {};

  VIEWS.cluster = {
    setup: () => el('h2', { text: 'Cluster ' + S.topo.name }),
    async update(content) {
      const nodes = (await api('/api/v1/nodes')).nodes;
      const c = { gpus: 0, free: 0, alloc: 0, unavail: 0 };
      for (const n of nodes) {
        c.gpus += n.gpus; c.free += n.free; c.alloc += n.allocated; c.unavail += n.unavailable;
      }
      const levels = S.topo.levels.map((l) => l.name + ' (' + l.oversubscription + ':1)').join(' → ');
      const r = S.topo.rails;
      const rails = r.count > 0
        ? r.count + ' rails: NIC i of every node goes to rail switch i, one set of rail switches ' +
          (r.scope_level ? 'per ' + r.scope_level : 'for the whole cluster')
        : 'no rails';
      content.replaceChildren(
        el('div', { class: 'cards', id: 'cluster-cards' },
          card('nodes', nodes.length, 'cluster-nodes'), card('GPUs', c.gpus, 'cluster-gpus'),
          card('free GPUs', c.free, 'cluster-free'), card('allocated', c.alloc, 'cluster-allocated'),
          card('unavailable', c.unavail, 'cluster-unavailable')),
        el('div', { class: 'muted', text: 'network levels: ' + (levels || 'none') + ' · ' + rails }),
        ...[legend(), nvlinkLegend(), renderTree(nodes, null)].filter(Boolean));
    },
  };

  // One node's topology; `job` (optional) marks a job's ranks: {rankOf: Map(gpu -> rank),
  // nics: Set(NIC names its ranks use)}; the node's other GPUs are dimmed.
  function nodeGraph(t, states, job) {
    const devs = [];
    // idx: the device's position on the node, which the API's GPU numbers are (gpu_states, ranks,
    // placements); its name (GPU<index>) is the topology's own number.
    t.gpus.forEach((g, pos) => devs.push({ kind: 'gpu', name: g.name, idx: pos, pcie: g.pcie, numa: g.numa }));
    t.nics.forEach((n, pos) => devs.push({ kind: 'nic', name: n.name, idx: pos, pcie: n.pcie, numa: n.numa, nic: n }));
    // Where the topology gives no PCIe tree (nvidia-smi topo -m), devices hang off their NUMA
    // node, and each NIC sits beside the GPU it shares a PCIe switch with (PIX, else PXB).
    const chainOf = (d) => {
      const c = [];
      if (d.pcie.host_bridge >= 0) c.push('hb:' + d.pcie.host_bridge);
      for (const q of d.pcie.switches || []) c.push('sw:' + q);
      if (!c.length && d.numa !== null && d.numa !== undefined) c.push('numa:' + d.numa);
      return c;
    };
    const near = new Map();
    for (const cls of ['PXB', 'PIX']) {
      for (const l of t.links) {
        if (l.path !== cls) continue;
        const g = t.gpus.find((x) => x.name === l.a || x.name === l.b);
        const n = t.nics.find((x) => x.name === l.a || x.name === l.b);
        if (g && n && (!near.has(n.name) || cls === 'PIX')) near.set(n.name, [g.name, t.gpus.indexOf(g), cls]);
      }
    }
    const key = (d) => chainOf(d).join('.');
    const order = (d) => (d.kind === 'gpu' ? d.idx : near.has(d.name) ? near.get(d.name)[1] + 0.5 : 1000 + d.idx);
    devs.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : order(a) - order(b)));
    const depth = Math.max(1, ...devs.map((d) => chainOf(d).length));
    const W = 74, top = 24, rowH = 62, devY = top + rowH * depth;
    const width = Math.max(360, devs.length * W + 40);
    const height = devY + (t.nvswitch ? 130 : 110);
    const svg = sv('svg', { id: job ? null : 'node-graph', width, height, viewBox: '0 0 ' + width + ' ' + height, class: 'plot' });
    const pos = new Map(); // "hb:i" / "sw:i" / device name -> [x, y, xs]
    devs.forEach((d, i) => { pos.set(d.name, [30 + i * W + W / 2 - 10, devY]); });
    const members = new Map();
    const edges = new Set();
    for (const d of devs) {
      const chain = chainOf(d);
      chain.forEach((k, i) => {
        if (!members.has(k)) members.set(k, { xs: [], depth: i });
        members.get(k).xs.push(pos.get(d.name)[0]);
        edges.add(k + '>' + (i + 1 < chain.length ? chain[i + 1] : d.name));
      });
    }
    for (const [k, m] of members) {
      const x = m.xs.reduce((a, b) => a + b, 0) / m.xs.length;
      pos.set(k, [x, top + rowH * m.depth]);
    }
    for (const e of edges) {
      const [a, b] = e.split('>');
      const pa = pos.get(a), pb = pos.get(b);
      svg.append(sv('line', { x1: pa[0], y1: pa[1] + 12, x2: pb[0], y2: pb[1] - 12, stroke: '#99a', 'stroke-width': 1.2 }));
    }
    for (const [k, m] of members) {
      const [x, y] = pos.get(k);
      let label = k;
      if (k.startsWith('hb:')) {
        const hb = t.host_bridges.find((h) => 'hb:' + h.id === k);
        label = 'host bridge ' + k.slice(3) + (hb && hb.numa !== null ? ' · NUMA ' + hb.numa : '');
      } else if (k.startsWith('numa:')) {
        const nn = t.numa_nodes.find((q) => 'numa:' + q.id === k);
        label = 'NUMA ' + k.slice(5) + (nn && nn.cpus ? ' · CPUs ' + nn.cpus : '');
      } else {
        const s = t.pcie_switches.find((q) => 'sw:' + q.id === k);
        label = 'PCIe switch ' + k.slice(3) + (s && s.gen ? ' · Gen' + s.gen + (s.width ? ' x' + s.width : '') : '');
      }
      const w = Math.max(90, label.length * 6.2);
      svg.append(sv('g', { 'data-pcie': k }, sv('rect', { x: x - w / 2, y: y - 12, width: w, height: 24, rx: 4, fill: '#eef0f4', stroke: '#889' }),
        sv('text', { x, y: y + 4, 'text-anchor': 'middle', text: label })));
    }
    if (t.nvswitch) {
      const gp = devs.filter((d) => d.kind === 'gpu').map((d) => pos.get(d.name)[0]);
      const y = devY + 78, x0 = Math.min(...gp) - 20, x1 = Math.max(...gp) + 20;
      for (const g of t.gpus) {
        const x = pos.get(g.name)[0];
        svg.append(sv('line', { x1: x, y1: devY + 20, x2: x, y2: y - 12, stroke: '#3b7dd8', 'stroke-width': 2.5 }));
        svg.append(sv('text', { x: x + 4, y: devY + 44, fill: '#3b7dd8', text: 'NV' + g.nvlink_ports }));
      }
      svg.append(sv('g', { id: 'nvswitch' }, sv('rect', { x: x0, y: y - 12, width: x1 - x0, height: 24, rx: 4, fill: '#cfe4ff', stroke: '#3b7dd8' }),
        sv('text', { x: (x0 + x1) / 2, y: y + 4, 'text-anchor': 'middle', text: 'NVSwitch' + (t.nvswitch_count > 0 ? ' × ' + t.nvswitch_count : '') })));
    } else {
      let k = 0;
      for (const l of t.links) {
        if (!l.path.startsWith('NV') || !pos.has(l.a) || !pos.has(l.b)) continue;
        const [xa] = pos.get(l.a), [xb] = pos.get(l.b);
        const dy = 26 + 10 * (k++ % 6);
        svg.append(sv('path', { d: 'M' + xa + ' ' + (devY + 16) + ' C' + xa + ' ' + (devY + 16 + dy) + ' ' + xb + ' ' + (devY + 16 + dy) + ' ' + xb + ' ' + (devY + 16), fill: 'none', stroke: '#3b7dd8', 'stroke-width': 1 + Math.min(l.nvlinks, 6) * 0.5 }));
        svg.append(sv('text', { x: (xa + xb) / 2, y: devY + 16 + dy * 0.75, 'text-anchor': 'middle', fill: '#3b7dd8', text: l.path }));
      }
    }
    for (const [nic, [gpu, , cls]] of near) {
      if (!pos.has(nic) || !pos.has(gpu)) continue;
      const xa = pos.get(gpu)[0], xb = pos.get(nic)[0];
      svg.append(sv('line', { x1: xa, y1: devY - 20, x2: xb, y2: devY - 20, stroke: '#a80', 'stroke-dasharray': '3 2' }),
        sv('text', { x: (xa + xb) / 2, y: devY - 24, 'text-anchor': 'middle', fill: '#a80', text: cls }));
    }
    for (const d of devs) {
      const [x, y] = pos.get(d.name);
      if (d.kind === 'gpu') {
        const st = states.find((s) => s.gpu === d.idx) || { state: 'free', holders: [] };
        const rank = job ? job.rankOf.get(d.idx) : undefined;
        const sub = job ? (rank === undefined ? 'other' : 'rank ' + rank) : st.holders.length ? st.holders[0] : st.state;
        const g = sv('g', { 'data-gpu': d.idx, class: 'gpunode', 'data-rank': rank, opacity: job && rank === undefined ? 0.35 : null },
          sv('rect', { x: x - 30, y: y - 14, width: 60, height: 30, rx: 3, class: 'st-' + st.state, stroke: st.health === 'degraded' || st.nvlink_health === 'degraded' ? '#f0c419' : '#445', 'stroke-width': st.health === 'degraded' || st.nvlink_health === 'degraded' ? 3 : 1 }),
          sv('text', { x, y: y, 'text-anchor': 'middle', fill: st.state === 'free' ? '#123' : '#fff', text: d.name }),
          sv('text', { x, y: y + 12, 'text-anchor': 'middle', fill: st.state === 'free' ? '#456' : '#fff', text: sub }));
        svg.append(g);
      } else {
        const n = d.nic;
        const used = job && job.nics.has(d.name);
        svg.append(sv('g', { 'data-nic': d.name, 'data-used': used ? 1 : null, opacity: job && !used ? 0.35 : null },
          sv('rect', { x: x - 30, y: y - 14, width: 60, height: 30, rx: 10, fill: '#fff7e0', stroke: '#a80', 'stroke-width': used ? 3 : 1 }),
          sv('text', { x, y, 'text-anchor': 'middle', text: d.name }),
          sv('text', { x, y: y + 12, 'text-anchor': 'middle', fill: '#654', text: (n.rate_gbps ? n.rate_gbps + 'G ' : '') + n.link_layer })));
      }
    }
    return svg;
  }
  function pathMatrix(t) {
    const names = t.gpus.map((g) => g.name).concat(t.nics.map((n) => n.name));
    const p = new Map();
    for (const l of t.links) { p.set(l.a + '|' + l.b, l.path); p.set(l.b + '|' + l.a, l.path); }
    return el('table', { class: 'matrix', id: 'path-matrix' },
      el('tr', {}, el('th', {}), names.map((n) => el('th', { text: n }))),
      names.map((a) => el('tr', {}, el('th', { text: a }), names.map((b) => {
        const v = a === b ? 'X' : p.get(a + '|' + b) || '';
        return el('td', { class: 'p-' + v.replace(/\d+$/, ''), text: v });
      }))));
  }

  // The rail NIC `pos` of node `tn` is on: rail i for NIC i (i < rails.count), within the
  // node's domain at the rails' scope level when there is one.
  function railOf(tn, pos) {
    const r = S.topo.rails;
    if (!r.count || pos >= r.count) return 'none';
    let d = tn.domain;
    while (r.scope_level && d >= 0 && S.topo.levels[S.topo.domains[d].level].name !== r.scope_level) {
      d = S.topo.domains[d].parent;
    }
    return 'rail ' + pos + (r.scope_level && d >= 0 ? ' of ' + S.topo.domains[d].name : '');
  }
  VIEWS.node = {
    setup(name) {
      const out = el('span', { id: 'node-action' });
      const reason = el('input', { id: 'node-reason', placeholder: 'reason (drain)', size: 24 });
      return el('div', {}, el('div', { class: 'toolbar' },
        el('a', { href: '#/cluster', text: '← cluster' }), reason,
        el('button', { id: 'node-drain', text: 'Drain', onclick: () => change('/api/v1/nodes/' + encodeURIComponent(name) + '/drain', reason.value ? { reason: reason.value } : {}, out) }),
        el('button', { id: 'node-resume', text: 'Resume', onclick: () => change('/api/v1/nodes/' + encodeURIComponent(name) + '/resume', {}, out) }),
        out));
    },
    async update(content, name) {
      const nodes = (await api('/api/v1/nodes')).nodes;
      const n = nodes.find((x) => x.name === name);
      const tn = S.topo.nodes.find((x) => x.name === name);
      if (!n || !tn) {
        content.replaceChildren(el('p', { class: 'error', id: 'node-missing', text: 'no node ' + name }));
        return;
      }
      const t = S.topo.profiles[tn.profile].topology;
      const gpuRows = t.gpus.map((g, pos) => {
        const st = n.gpu_states.find((s) => s.gpu === pos) || { state: '?', holders: [], health: g.health };
        return el('tr', { 'data-gpu': pos }, el('td', { text: g.name }), el('td', { text: g.model }),
          el('td', {}, el('i', { class: 'sw st-' + st.state }), ' ' + st.state), el('td', { text: st.health + (st.nvlink_health && st.nvlink_health !== 'healthy' ? ', NVLink ' + st.nvlink_health : '') }),
          el('td', {}, st.holders.map((h, i) => [i ? ', ' : '', h.startsWith('job-') ? jobLink(h) : h])),
          el('td', { text: g.numa === null ? '—' : g.numa }), el('td', { text: (g.pcie.switches || []).join(' → ') || '—' }),
          el('td', { class: 'num', text: g.nvlink_ports }));
      });
      const nicHealth = (pos, c) => ((n.nic_health || []).find((s) => s.nic === pos) || { health: c.health }).health;
      const nicRows = t.nics.map((c, pos) => el('tr', { 'data-nic-row': c.name }, el('td', { text: c.name }), el('td', { class: 'c-rail', text: railOf(tn, pos) }),
        el('td', { class: 'num', text: c.rate_gbps === null ? '—' : c.rate_gbps }), el('td', { text: c.link_layer }),
        el('td', { text: c.numa === null ? '—' : c.numa }), el('td', { class: 'c-health', text: nicHealth(pos, c) }),
        el('td', { text: (c.pcie.switches || []).join(' → ') || '—' })));
      const nvd = tn.nvlink_domain >= 0 ? S.topo.nvlink_domains[tn.nvlink_domain].name : 'none';
      content.replaceChildren(
        el('h2', { text: 'Node ' + name }),
        el('div', { class: 'cards' }, card('profile', n.profile, 'node-profile'), card('GPUs', n.gpus, 'node-gpus-total'),
          card('free GPUs', n.free, 'node-free'), card('health', n.health, 'node-health'),
          card('drained', n.drained ? 'yes' : 'no', 'node-drained'), card('NVLink domain', nvd, 'node-nvl'),
          card('GPU model', t.gpu_model || '—')),
        el('div', {}, 'jobs here: ', n.jobs.length ? n.jobs.map((j, i) => [i ? ', ' : '', jobLink(j)]) : 'none'),
        el('h3', { text: 'In-node topology' }), legend(), nodeGraph(t, n.gpu_states),
        el('h3', { text: 'GPUs' }),
        el('table', { id: 'node-gpus' }, el('tr', {}, ['GPU', 'model', 'state', 'health', 'held by', 'NUMA', 'PCIe switches', 'NVLink ports'].map((h) => el('th', { text: h }))), gpuRows),
        el('h3', { text: 'NICs' }),
        el('table', { id: 'node-nics' }, el('tr', {}, ['NIC', 'rail', 'Gbit/s', 'link layer', 'NUMA', 'health', 'PCIe switches'].map((h) => el('th', { text: h }))), nicRows),
        el('h3', { text: 'Path matrix (as nvidia-smi topo -m names them)' }), pathMatrix(t));
    },
  };

  const QUEUE_COLS = [
    ['id', 'job', (j) => j.id], ['name', 'name', (j) => j.name], ['user', 'user', (j) => j.user],
    ['queue', 'queue', (j) => j.queue], ['priority', 'priority', (j) => j.priority],
    ['gpus', 'GPUs', (j) => j.gpus], ['state', 'state', (j) => j.state],
    ['pred', 'predicted ms', (j) => (j.placement ? j.placement.predicted_ms : null)],
    ['best', 'best possible ms', (j) => (j.placement ? j.placement.best_possible_ms : null)],
  ];
  // "gpu001 gpu002[0,1]": a node taken whole by its name alone; beyond 6 nodes, a count.
  function where(p) {
    const whole = (n) => {
      const tn = S.topo.nodes[topoIndex().get(n.node)];
      return tn && S.topo.profiles[tn.profile].topology.gpus.length === n.gpus.length;
    };
    const txt = p.nodes.map((n) => n.node + (whole(n) ? '' : '[' + n.gpus.join(',') + ']'));
    return txt.length > 6 ? txt.slice(0, 3).join(' ') + ' … ' + txt[txt.length - 1] + ' (' + txt.length + ' nodes)' : txt.join(' ');
  }
  VIEWS.queue = {
    setup() {
      const f = el('input', { id: 'queue-filter', placeholder: 'filter: name, user, queue, job', value: S.queue.filter, size: 30 });
      f.addEventListener('input', () => { S.queue.filter = f.value; refresh(); });
      const st = el('select', { id: 'queue-state' }, el('option', { value: '', text: 'all states' }),
        ['PENDING', 'RUNNING', 'COMPLETING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'PREEMPTED', 'NODE_FAIL', 'REQUEUED']
          .map((s) => el('option', { value: s, text: s, selected: S.queue.state === s })));
      st.addEventListener('change', () => { S.queue.state = st.value; refresh(); });
      return el('div', {}, el('h2', { text: 'Queue' }), el('div', { class: 'toolbar' }, f, st));
    },
    async update(content) {
      const jobs = (await api('/api/v1/jobs?limit=100000')).jobs;
      const q = S.queue.filter.toLowerCase();
      const shown = jobs.filter((j) => (!S.queue.state || j.state === S.queue.state) &&
        (!q || [j.job_id, j.name, j.user, j.queue].some((v) => String(v).toLowerCase().includes(q))));
      const col = QUEUE_COLS.find((c) => c[0] === S.queue.sort) || QUEUE_COLS[0];
      shown.sort((a, b) => {
        const x = col[2](a), y = col[2](b);
        if (x === y) return a.id - b.id;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * S.queue.dir;
      });
      const pending = shown.filter((j) => j.state === 'PENDING').slice(0, 100);
      const why = new Map(await Promise.all(pending.map(async (j) => {
        try { return [j.id, (await api('/api/v1/jobs/' + j.id + '/explain')).explanation]; } catch (e) { return [j.id, e.message]; }
      })));
      const head = el('tr', {}, QUEUE_COLS.map(([k, label]) => {
        const th = el('th', { class: 'sortable' + (['priority', 'gpus', 'pred', 'best'].includes(k) ? ' num' : ''), 'data-sort': k, text: label + (S.queue.sort === k ? (S.queue.dir > 0 ? ' ▲' : ' ▼') : '') });
        th.addEventListener('click', () => {
          S.queue.dir = S.queue.sort === k ? -S.queue.dir : 1;
          S.queue.sort = k;
          refresh();
        });
        return th;
      }), el('th', { text: 'why pending / where' }));
      const rows = shown.map((j) => el('tr', { 'data-job': j.id, 'data-state': j.state },
        el('td', {}, jobLink(j.job_id)), el('td', { text: j.name }), el('td', { text: j.user }),
        el('td', { text: j.queue }), el('td', { class: 'num', text: j.priority }), el('td', { class: 'num', text: j.gpus }),
        el('td', { class: 'c-state', text: j.state }),
        el('td', { class: 'num c-pred', text: fmtMs(j.placement && j.placement.predicted_ms) }),
        el('td', { class: 'num c-best', text: fmtMs(j.placement && j.placement.best_possible_ms) }),
        el('td', { class: 'explain c-why', text: j.state === 'PENDING' ? (why.get(j.id) || '') : j.placement ? where(j.placement) : '' })));
      const counts = {};
      for (const j of jobs) counts[j.state] = (counts[j.state] || 0) + 1;
      content.replaceChildren(
        el('div', { class: 'muted', id: 'queue-counts', text: shown.length + ' of ' + jobs.length + ' jobs shown · ' + Object.entries(counts).map(([k, v]) => v + ' ' + k).join(' · ') }),
        el('table', { id: 'queue-table' }, head, rows));
    },
  };

  // The topology's name of the GPU at `pos` on node `name` (the API numbers GPUs by position).
  function gpuName(name, pos) {
    const tn = S.topo.nodes[topoIndex().get(name)];
    const g = tn && S.topo.profiles[tn.profile].topology.gpus[pos];
    return g ? g.name : 'GPU position ' + pos;
  }
  const isoTime = (us) => new Date(us / 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  // The last time the job left RUNNING for anything but its normal end.
  function interruption(events) {
    const normal = new Set(['RUNNING', 'COMPLETING', 'COMPLETED']);
    return events.filter((e) => (e.from === 'RUNNING' || e.from === 'COMPLETING') && !normal.has(e.to)).pop() || null;
  }
  // Where a dimension's slowest hop lies: inside one node (NVLink or PCIe), else the network
  // level of the domain the job was placed in (the highest switch its traffic may cross).
  function hopOf(dim, p) {
    if (p.nodes.length === 1) return 'inside ' + p.nodes[0].node + ' (NVLink or PCIe: see the node)';
    const d = S.topo.domains.find((x) => x.name === p.domain);
    const lvl = d && S.topo.levels[d.level];
    const scope = lvl ? lvl.name + ' switch ' + d.name + (lvl.oversubscription > 1 ? ', ' + lvl.oversubscription + ':1 oversubscribed below it' : '') : p.domain;
    return 'across ' + p.nodes.length + ' nodes: NICs and the network up to the ' + scope;
  }
  // NCCL's predicted transport per hop of rank 0's groups, the warnings and the environment.
  function transportTable(ex) {
    if (!ex.transports || !ex.transports.length) return [];
    const env = Object.entries(ex.nccl_env || {}).map(([k, v]) => k + '=' + v).join(' ');
    return [el('h3', { text: 'Predicted NCCL transport per hop (rank 0\'s groups)' }),
      el('table', { id: 'job-transports' }, el('tr', {}, ['dimension', 'transport', 'hops', 'e.g.', 'via'].map((h) => el('th', { text: h }))),
        ex.transports.map((h) => el('tr', { 'data-dim': h.dimension }, el('td', { text: h.dimension }), el('td', { class: 'c-transport', text: h.transport }),
          el('td', { class: 'num', text: h.hops }), el('td', { text: h.example }), el('td', { text: h.via || '—' })))),
      ...(ex.transport_warnings || []).map((w) => el('p', { class: 'error', text: 'warning: ' + w })),
      env ? el('p', { id: 'job-nccl-env' }, 'environment: ', el('code', { text: env })) : null];
  }
  // Each node's topology with the job's ranks on its GPUs and the NICs they use (first 4 nodes).
  function rankDrawings(p, ranks, nodes) {
    if (!ranks.length) return [];
    const byNode = new Map();
    for (const r of ranks) {
      if (!byNode.has(r.node)) byNode.set(r.node, { rankOf: new Map(), nics: new Set() });
      byNode.get(r.node).rankOf.set(r.gpu, r.rank);
      if (r.nic !== null) byNode.get(r.node).nics.add(r.nic);
    }
    const out = [el('h3', { text: 'Ranks on each node (GPU → rank, the NICs they use outlined)' })];
    const states = nodeStates(nodes);
    let k = 0;
    for (const [name, job] of byNode) {
      if (k++ === 4) {
        out.push(el('p', { class: 'muted', text: (byNode.size - 4) + ' more nodes: see the rank table' }));
        break;
      }
      const tn = S.topo.nodes[topoIndex().get(name)];
      const n = states.get(name);
      if (!tn || !n) continue;
      out.push(el('div', { class: 'ranknode', 'data-rank-node': name }, el('div', { class: 'dlabel', text: name }),
        nodeGraph(S.topo.profiles[tn.profile].topology, n.gpu_states, job)));
    }
    return out;
  }
  VIEWS.job = {
    setup(id) {
      const out = el('span', { id: 'job-action' });
      return el('div', { class: 'toolbar' }, el('a', { href: '#/queue', text: '← queue' }),
        el('button', { id: 'job-cancel', text: 'Cancel job', onclick: () => change('/api/v1/jobs/' + id + '/cancel', {}, out) }), out);
    },
    async update(content, id) {
      const j = await api('/api/v1/jobs/' + encodeURIComponent(id));
      let ex = null;
      try { ex = await api('/api/v1/jobs/' + encodeURIComponent(id) + '/explain'); } catch (e) { ex = { explanation: e.message }; }
      const nodes = (await api('/api/v1/nodes')).nodes;
      const p = j.placement;
      const parts = [el('h2', { text: j.job_id + ' ' + j.name }),
        el('div', { class: 'cards' }, card('state', j.state, 'job-state'), card('GPUs', j.gpus, 'job-gpus'),
          card('user / queue', j.user + ' / ' + j.queue), card('priority', j.priority),
          card('source', j.source + (j.pod_group ? ' ' + j.pod_group : '')),
          card('predicted ms', fmtMs(p && p.predicted_ms), 'job-predicted'),
          card('best possible ms', fmtMs(p && p.best_possible_ms), 'job-best'))];
      if (p) {
        const dims = [['TP', p.tp_ms], ['PP', p.pp_ms], ['DP', p.dp_ms]];
        const worst = dims.reduce((a, b) => (b[1] > a[1] ? b : a));
        parts.push(el('h3', { text: 'Predicted communication per step, by dimension' }),
          el('table', { id: 'job-dims' }, el('tr', {}, el('th', { text: 'dimension' }), el('th', { class: 'num', text: 'ms' })),
            dims.map(([k, v]) => el('tr', { 'data-dim': k }, el('td', { text: k + (k === worst[0] && v > 0 ? ' (bottleneck)' : '') }), el('td', { class: 'num', text: fmtMs(v) })))),
          el('p', { id: 'job-bottleneck', text: worst[1] > 0 ? 'Bottleneck: ' + worst[0] + ' (' + fmtMs(worst[1]) + ' ms) ' + hopOf(worst[0], p) : 'No communication predicted.' }),
          el('p', { class: 'explain', id: 'job-placement-explanation', text: ex.placement_explanation || '' }),
          ...transportTable(ex),
          el('h3', { text: 'Placement on the network (' + p.domain + ')' }), legend(),
          renderTree(nodes, {
            gpus: new Set(p.nodes.flatMap((n) => n.gpus.map((g) => n.node + '/' + g))),
            nodes: new Set(p.nodes.map((n) => n.node)),
          }));
        const ranks = p.ranks || [];
        parts.push(...rankDrawings(p, ranks, nodes));
        parts.push(el('h3', { text: 'Ranks: rank → node → GPU → NIC' }),
          el('table', { id: 'job-ranks' }, el('tr', {}, ['rank', 'node', 'GPU', 'NIC'].map((h) => el('th', { text: h }))),
            ranks.slice(0, 2048).map((r) => el('tr', {}, el('td', { class: 'num', text: r.rank }),
              el('td', {}, el('a', { href: '#/node/' + encodeURIComponent(r.node), text: r.node })),
              el('td', { text: gpuName(r.node, r.gpu) }), el('td', { text: r.nic === null ? '—' : r.nic })))),
          ranks.length > 2048 ? el('p', { class: 'muted', text: (ranks.length - 2048) + ' more ranks not shown' }) : null);
      }
      const stop = interruption(j.events || []);
      if (stop) {
        parts.push(el('h3', { text: 'Last interruption' }), el('p', { id: 'job-interruption', class: 'explain' },
          el('b', { text: stop.from + ' → ' + stop.to }), ' at ' + isoTime(stop.time_us) + ': ' + stop.reason,
          stop.category ? el('span', { class: 'muted', text: ' (cause: ' + stop.category + ')' }) : null));
      }
      parts.push(el('h3', { text: 'Explanation' }), el('p', { class: 'explain', id: 'job-explanation', text: j.explanation || ex.explanation || '' }),
        el('h3', { text: 'Events' }),
        el('table', { id: 'job-events' }, el('tr', {}, ['#', 'time', 'from', 'to', 'reason'].map((h) => el('th', { text: h }))),
          (j.events || []).map((e) => el('tr', {}, el('td', { class: 'num', text: e.seq }),
            el('td', { text: isoTime(e.time_us) }),
            el('td', { text: e.from }), el('td', { text: e.to }), el('td', { class: 'explain', text: e.reason })))));
      content.replaceChildren(...parts.filter(Boolean));
    },
  };

  function linePlot(id, title, series, xLabel, yLabel, yMax) {
    const W = 560, H = 260, L = 56, B = 36, T = 24, R = 34;
    const pts = series.flatMap((s) => s.points);
    const svg = sv('svg', { id, width: W, height: H, class: 'plot' }, sv('text', { x: L, y: 15, text: title }));
    if (!pts.length) return svg;
    const xMax = Math.max(...pts.map((p) => p[0])) || 1;
    const yTop = yMax || Math.max(...pts.map((p) => p[1])) || 1;
    const X = (x) => L + (W - L - R) * x / xMax, Y = (y) => H - B - (H - B - T) * y / yTop;
    svg.append(sv('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#445' }), sv('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#445' }));
    for (let i = 0; i <= 4; ++i) {
      svg.append(sv('text', { x: X(xMax * i / 4), y: H - B + 14, 'text-anchor': 'middle', text: fmtS(xMax * i / 4) }),
        sv('text', { x: L - 4, y: Y(yTop * i / 4) + 4, 'text-anchor': 'end', text: (yTop * i / 4).toFixed(2) }));
    }
    svg.append(sv('text', { x: (L + W) / 2, y: H - 4, 'text-anchor': 'middle', text: xLabel }), sv('text', { x: 4, y: T - 8, text: yLabel }));
    series.forEach((s, i) => {
      const colour = NVL_COLOURS[i % NVL_COLOURS.length];
      svg.append(sv('polyline', { 'data-policy': s.name, fill: 'none', stroke: colour, 'stroke-width': 1.5, points: s.points.map((p) => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join(' ') }),
        sv('text', { x: W - R - 4, y: T + 14 * i, 'text-anchor': 'end', fill: colour, text: s.name }));
    });
    return svg;
  }
  function reportBody(r) {
    const pols = Object.entries(r.policies || {});
    const figs = [['jobs', 'jobs', (p) => p.jobs], ['mean JCT', 'mean_jct_s', (p) => fmtS(p.mean_jct_s) + (p.mean_jct_ci95_s ? ' ± ' + fmtS(p.mean_jct_ci95_s) : '')],
      ['p50 JCT', 'p50_jct_s', (p) => fmtS(p.p50_jct_s)], ['p99 JCT', 'p99_jct_s', (p) => fmtS(p.p99_jct_s)],
      ['GPU-time-weighted JCT', 'gpu_time_weighted_jct_s', (p) => fmtS(p.gpu_time_weighted_jct_s)],
      ['mean queueing', 'mean_queue_s', (p) => fmtS(p.mean_queue_s)], ['GPU utilisation', 'gpu_utilization', (p) => Number(p.gpu_utilization).toFixed(3)],
      ['useful utilisation', 'useful_utilization', (p) => Number(p.useful_utilization).toFixed(3)],
      ['comm stretch', 'mean_comm_slowdown', (p) => Number(p.mean_comm_slowdown).toFixed(3)],
      ['contention slowdown', 'contention_slowdown', (p) => (p.contention_slowdown === undefined ? '—' : Number(p.contention_slowdown).toFixed(3))]];
    const out = [el('p', { class: 'muted', id: 'report-meta', text: (S.reportName ? S.reportName + ': ' : '') + 'cluster ' + (r.cluster && r.cluster.name) + ' · ' + pols.length + ' policies · seed ' + r.seed + (r.experiment ? ' · ' + r.experiment.mode : '') }),
      el('table', { id: 'report-policies' }, el('tr', {}, el('th', { text: 'policy' }), figs.map((f) => el('th', { class: 'num', text: f[0] }))),
        pols.map(([name, p]) => el('tr', { 'data-policy': name }, el('td', { text: name }), figs.map((f) => el('td', { class: 'num', 'data-figure': f[1], text: f[2](p) })))))];
    const buckets = [...new Set(pols.flatMap(([, p]) => Object.keys(p.by_size || {})))];
    out.push(el('h3', { text: 'Mean JCT by job size (GPUs)' }),
      el('table', { id: 'report-by-size' }, el('tr', {}, el('th', { text: 'GPUs' }), pols.map(([n]) => el('th', { class: 'num', text: n }))),
        buckets.map((b) => el('tr', {}, el('td', { text: b }), pols.map(([, p]) => el('td', { class: 'num', text: p.by_size && p.by_size[b] && p.by_size[b].jobs ? fmtS(p.by_size[b].mean_jct_s) + ' (' + p.by_size[b].jobs + ')' : '—' }))))));
    if (pols.some(([, p]) => p.jct_cdf)) {
      out.push(el('h3', { text: 'JCT CDF' }), linePlot('report-cdf', 'fraction of jobs finished within a JCT', pols.map(([n, p]) => ({ name: n, points: p.jct_cdf || [] })), 'JCT', 'fraction', 1));
    }
    if (pols.some(([, p]) => p.utilization_series)) {
      out.push(el('h3', { text: 'GPU utilisation over time' }), linePlot('report-util', 'busy GPUs / all GPUs', pols.map(([n, p]) => ({ name: n, points: p.utilization_series || [] })), 'time', 'busy', 1));
    }
    if (!pols.some(([, p]) => p.jct_cdf)) out.push(el('p', { class: 'muted', text: 'This report has no per-job series (written before report.json carried jct_cdf): tables only.' }));
    return out;
  }
  VIEWS.report = {
    live: false,
    setup() {
      const input = el('input', { id: 'report-file', type: 'file', accept: '.json,application/json' });
      input.addEventListener('change', () => {
        const f = input.files[0];
        if (!f) return;
        const rd = new FileReader();
        rd.onload = () => {
          try { S.report = JSON.parse(rd.result); S.reportName = f.name; S.reportError = ''; } catch (e) { S.report = null; S.reportError = f.name + ': not JSON: ' + e.message; }
          refresh();
        };
        rd.readAsText(f);
      });
      return el('div', {}, el('h2', { text: 'Simulator report' }),
        el('div', { class: 'toolbar' }, 'open a report.json written by toposched simulate: ', input));
    },
    async update(content) {
      if (S.reportError) content.replaceChildren(el('p', { class: 'error', id: 'report-error', text: S.reportError }));
      else if (!S.report) content.replaceChildren(el('p', { class: 'muted', text: 'No report opened. Reports stay in this browser; nothing is uploaded to the daemon.' }));
      else if (!S.report.policies) content.replaceChildren(el('p', { class: 'error', id: 'report-error', text: S.reportName + ': no "policies" object: not a toposched simulate report.json' }));
      else content.replaceChildren(...reportBody(S.report));
    },
  };

  // ---- routing and the live loop ----
  function parseRoute() {
    const parts = location.hash.replace(/^#\/?/, '').split('/');
    const name = Object.prototype.hasOwnProperty.call(VIEWS, parts[0]) ? parts[0] : 'cluster';
    let arg = parts.slice(1).join('/');
    try { arg = decodeURIComponent(arg); } catch (e) { /* a malformed escape: taken as written */ }
    return { name, arg };
  }
  function setLive(ok, text) {
    const l = document.getElementById('live');
    l.className = 'live' + (ok ? '' : ' error');
    l.textContent = text;
  }
  async function refresh() {
    if (S.busy) { S.again = true; return; }
    S.busy = true;
    const main = document.getElementById('view');
    try {
      if (!S.topo) S.topo = await api('/api/v1/topology');
      const r = parseRoute();
      const key = r.name + '/' + r.arg;
      if (S.route !== key) {
        S.route = key;
        S.content = el('div', { id: 'content' });
        main.replaceChildren(VIEWS[r.name].setup(r.arg), S.content);
        main.dataset.view = r.name;
        main.dataset.ready = '0'; // until this view's first update is drawn
        for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.id === 'nav-' + r.name);
      }
      const t0 = performance.now();
      await VIEWS[r.name].update(S.content, r.arg);
      // For the render benchmark (bench/dashboard_render.py): the page's first view drawn, in ms
      // since navigation, and the last update's duration (its API reads included).
      if (!main.dataset.firstRenderMs) main.dataset.firstRenderMs = performance.now().toFixed(1);
      main.dataset.lastUpdateMs = (performance.now() - t0).toFixed(1);
      main.dataset.ready = String(++S.renders);
      delete main.dataset.error;
      setLive(true, (VIEWS[r.name].live === false ? 'static' : 'live') + ' · updated ' + new Date().toLocaleTimeString());
    } catch (e) {
      setLive(false, 'error: ' + e.message);
      if (S.content && !S.content.childNodes.length) S.content.append(el('p', { class: 'error', id: 'view-error', text: e.message }));
      main.dataset.error = e.message;
    } finally {
      S.busy = false;
      if (S.again) { S.again = false; refresh(); }
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    const tok = document.getElementById('token');
    tok.value = S.token;
    tok.addEventListener('change', () => {
      S.token = tok.value.trim();
      sessionStorage.setItem('toposched.token', S.token);
      S.topo = null;
      refresh();
    });
    window.addEventListener('hashchange', refresh);
    setInterval(() => { if (VIEWS[parseRoute().name].live !== false) refresh(); }, POLL_MS);
    refresh();
  });
})();
