// The SVG Gantt chart's script (gantt_svg_parts.h): pan, time zoom and sticky labels in a browser,
// inline in the SVG (no external resources), for a chart opened as a file. The SVG renders fully
// without it (in an <img>, or where scripts are off); with it, the document takes the window
// (width and height 100%) and moves the layers itself, since a browser's own scrolling of an SVG
// document cannot keep parts of it in place. On zoom it stretches the plot along the time axis
// (the text keeps its size) and labels the ops and the time axis again, with the rules of
// gantt_svg_labels.cc and nice_tick_step(); the constants come from C++ (script_config).
#include <string>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

// The body of a function of K, the chart's geometry and the label rule's constants.
constexpr const char* kScript = R"JS(  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var root = document.documentElement;
  var layer = {};
  ['scroll', 'captions', 'axis', 'fixed'].forEach(function (n) { layer[n] = document.getElementById('gantt-' + n); });
  if (!layer.scroll || !layer.axis || !layer.fixed || !layer.captions || typeof window.innerWidth !== 'number') return;
  var W0 = parseFloat(root.getAttribute('width')), H = parseFloat(root.getAttribute('height'));
  var span0 = K.right - K.left;
  var st = {k: 1, sx: 0, sy: 0, vw: window.innerWidth, vh: window.innerHeight};
  var moving = [], ops = [], xfers = [], ui = {};

  function num(el, a) { return parseFloat(el.getAttribute(a)); }
  function clamp(v, lo, hi) { return Math.max(lo, Math.min(hi, v)); }
  function X(x) { return K.left + (x - K.left) * st.k; }
  function chartWidth() { return W0 + span0 * (st.k - 1); }
  function fitK() { return Math.max(0.001, (st.vw - K.left - (W0 - K.right)) / span0); }
  function make(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function clear(g) { while (g.firstChild) g.removeChild(g.firstChild); }
  function tr(x, y) { return 'translate(' + x.toFixed(1) + ' ' + y.toFixed(1) + ')'; }

  // ---- What moves along the time axis, as it was drawn (k = 1)
  function remember() {
    var groups = root.querySelectorAll('.tx');
    for (var g = 0; g < groups.length; ++g) {
      var els = groups[g].querySelectorAll('rect, line, circle, text, path');
      for (var i = 0; i < els.length; ++i) {
        var el = els[i], b = {el: el, tag: el.tagName};
        if (b.tag === 'rect') { b.x = num(el, 'x'); b.w = num(el, 'width'); b.keep = el.classList.contains('pending'); }
        if (b.tag === 'line') { b.x = num(el, 'x1'); b.x2 = num(el, 'x2'); }
        if (b.tag === 'circle') b.x = num(el, 'cx');
        if (b.tag === 'text') { b.x = num(el, 'x'); b.x0 = el.hasAttribute('data-x0') ? num(el, 'data-x0') : b.x; }
        moving.push(b);
      }
    }
    var r = root.querySelectorAll('rect.op');
    for (var j = 0; j < r.length; ++j) {
      var o = r[j], type = o.classList.contains('F') ? 'F' : (o.classList.contains('B') ? 'B' : 'W');
      ops.push({x: num(o, 'x'), w: num(o, 'width'), y: num(o, 'y'), type: type, mb: +o.getAttribute('data-mb'),
                h: o.hasAttribute('data-lh') ? num(o, 'data-lh') : num(o, 'height'), fg: textOn(o.getAttribute('fill'))});
    }
    var t = root.querySelectorAll('rect.xfer[data-mb]');
    for (var m = 0; m < t.length; ++m) {
      xfers.push({x: num(t[m], 'x'), w: num(t[m], 'width'), y: num(t[m], 'y'), h: num(t[m], 'height'),
                  mb: +t[m].getAttribute('data-mb')});
    }
  }
  function textOn(hex) {
    var v = parseInt(hex.slice(1), 16), r = v >> 16, g = (v >> 8) & 255, b = v & 255;
    return 0.299 * r + 0.587 * g + 0.114 * b < 150 ? '#FFFFFF' : '#1A1A1A';
  }
  function stretch() {
    var k = st.k;
    for (var i = 0; i < moving.length; ++i) {
      var b = moving[i], el = b.el;
      if (b.tag === 'rect' && b.keep) el.setAttribute('x', X(b.x + b.w / 2) - b.w / 2);
      else if (b.tag === 'rect') { el.setAttribute('x', X(b.x)); el.setAttribute('width', b.w * k); }
      else if (b.tag === 'line') { el.setAttribute('x1', X(b.x)); el.setAttribute('x2', X(b.x2)); }
      else if (b.tag === 'circle') el.setAttribute('cx', X(b.x));
      else if (b.tag === 'text') el.setAttribute('x', X(b.x0) + (b.x - b.x0));
      else if (b.tag === 'path') {
        el.setAttribute('transform', 'translate(' + K.left + ' 0) scale(' + k + ' 1) translate(' + -K.left + ' 0)');
      }
    }
  }

  // ---- Labels: the rule of gantt_svg_labels.cc, at the current zoom
  function inBoxFont(w, h, chars, maxFont) {
    var f = Math.min(maxFont, (w - 2 * K.pad) / (chars * K.glyph), h - 1);
    return f >= K.minFont ? f : 0;
  }
  function label(x, y, f, fill, cls, s) {
    return make('text', {x: x.toFixed(1), y: y.toFixed(1), 'class': cls, 'font-size': f.toFixed(1), fill: fill,
                         'text-anchor': 'middle', 'pointer-events': 'none'}, s);
  }
  function laneLabels(row, every, out) {
    var last = -1e300, lastMb = -1, collisions = 0, right = X(K.right);
    for (var i = 0; i < row.length; ++i) {
      var o = row[i];
      if (o.mb % every) continue;
      var half = String(o.mb).length * K.laneFont * K.glyph / 2, mid = X(o.x) + o.w * st.k / 2;
      var cx = clamp(mid, K.left + half, right - half);
      if (cx - half < last + K.laneGap) { if (lastMb !== o.mb) ++collisions; continue; }
      last = cx + half;
      lastMb = o.mb;
      out.push({o: o, x: cx, tick: mid});
    }
    return collisions;
  }
  function labelEvery(rows) {
    var best = 1, bestShare = 2, most = Math.max(1, K.microbatches);
    for (var d = 1; ; d *= 10) {
      for (var f = 1; f <= 5; f += (f === 1 ? 1 : 3)) {
        var every = f * d, collisions = 0, placed = [];
        for (var r = 0; r < rows.length; ++r) collisions += laneLabels(rows[r], every, placed);
        var share = collisions ? collisions / (collisions + placed.length) : 0;
        if (share < bestShare) { best = every; bestShare = share; }
        if (share <= K.maxCollisions || every >= most) return best;
      }
    }
  }
  // Labels for the ops within a window's width either side of the view (relabelled on panning
  // past that), so that a zoom step stays quick on 12,000 ops.
  function relabel() {
    var g = document.getElementById('gantt-labels'), frag = document.createDocumentFragment(), rows = [], byY = {};
    var lo = st.sx - st.vw, hi = st.sx + 2 * st.vw;
    st.labelled = [lo, hi];
    for (var i = 0; i < ops.length; ++i) {
      var o = ops[i], x = X(o.x), w = o.w * st.k;
      if (x + w < lo || x > hi) continue;
      var s = String(o.mb), f = inBoxFont(w, o.h, s.length, K.maxFont);
      if (f > 0) { frag.appendChild(label(x + w / 2, o.y + o.h / 2 + f * 0.36, f, o.fg, 'label', s)); continue; }
      if (!byY[o.y]) { byY[o.y] = []; rows.push(byY[o.y]); }
      byY[o.y].push(o);
    }
    rows.forEach(function (row) { row.sort(function (a, b) { return a.x - b.x; }); });
    var every = labelEvery(rows), placed = [];
    rows.forEach(function (row) { laneLabels(row, every, placed); });
    placed.forEach(function (p) {
      var base = p.o.y - K.laneDy, colour = K.laneColour[p.o.type];
      frag.appendChild(make('line', {x1: p.tick.toFixed(1), y1: (base + 1.5).toFixed(1), x2: p.tick.toFixed(1),
                                     y2: p.o.y, 'class': 'tick-mb', stroke: colour, 'stroke-width': 1}));
      frag.appendChild(label(p.x, base, K.laneFont, colour, 'label above', String(p.o.mb)));
    });
    xfers.forEach(function (t) {
      var x = X(t.x), w = t.w * st.k, s = String(t.mb), f = inBoxFont(w, t.h, s.length, K.xferFont);
      if (x + w >= lo && x <= hi && f > 0) {
        frag.appendChild(label(x + w / 2, t.y + t.h / 2 + f * 0.36, f, '#FFFFFF', 'label xfer-label', s));
      }
    });
    clear(g);
    g.appendChild(frag);
  }

  // ---- Time axis: round ticks for the current zoom (as nice_tick_step in gantt_svg.cc)
  function niceStep(span, maxTicks) {
    var raw = span / Math.max(1, maxTicks), step = Math.pow(10, Math.floor(Math.log10(raw)));
    var fs = [1, 2, 5, 10];
    for (var i = 0; i < fs.length; ++i) if (fs[i] * step >= raw * (1 - 1e-12)) return fs[i] * step;
    return 10 * step;
  }
  function reticks() {
    var w = span0 * st.k, step = niceStep(K.end, Math.max(2, Math.floor(w / 90)));
    var decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9)), n = Math.floor(K.end / step + 1e-9);
    var grid = document.getElementById('gantt-grid'), groups = root.querySelectorAll('g.ticks');
    clear(grid);
    for (var g = 0; g < groups.length; ++g) clear(groups[g]);
    for (var i = 0; i <= n; ++i) {
      var x = K.left + w * i * step / K.end;
      grid.appendChild(make('line', {x1: x, y1: K.plotTop, x2: x, y2: K.plotBottom, stroke: K.gridColour, 'stroke-width': 1}));
      for (var j = 0; j < groups.length; ++j) {
        groups[j].appendChild(make('text', {x: x.toFixed(1), y: groups[j].getAttribute('data-baseline'), 'class': 'tick',
                                            'font-size': 10, fill: '#555555', 'text-anchor': i ? 'middle' : 'start'},
                                   (i * step).toFixed(decimals) + (i ? '' : ' ms')));
      }
    }
  }

  // ---- The view: layers, scroll bars, zoom
  function clampView() {
    st.sx = clamp(st.sx, 0, Math.max(0, chartWidth() - st.vw));
    st.sy = clamp(st.sy, 0, Math.max(0, H - st.vh));
  }
  function place() {
    var w = chartWidth();
    clampView();
    if (st.labelled && (st.sx < st.labelled[0] || st.sx + st.vw > st.labelled[1]) && !st.relabelQueued) {
      st.relabelQueued = true;
      window.requestAnimationFrame(function () { st.relabelQueued = false; relabel(); });
    }
    layer.scroll.setAttribute('transform', tr(-st.sx, -st.sy));
    layer.captions.setAttribute('transform', tr(0, -st.sy));
    layer.axis.setAttribute('transform', tr(-st.sx, Math.max(-st.sy, -K.axisTop)));
    layer.fixed.setAttribute('transform', tr(0, -st.sy));
    ui.corner.setAttribute('visibility', st.sy > K.axisTop ? 'visible' : 'hidden');
    bar(ui.hbar, st.sx, w, st.vw, true);
    bar(ui.vbar, st.sy, H, st.vh, false);
  }
  function bar(b, at, total, view, horizontal) {
    var track = horizontal ? st.vw - K.left - 14 : st.vh - 14, len = Math.max(24, track * view / total);
    b.track = track;
    b.len = len;
    b.el.setAttribute('visibility', total > view + 0.5 ? 'visible' : 'hidden');
    var pos = (track - len) * (total > view ? at / (total - view) : 0);
    if (horizontal) b.el.setAttribute('transform', tr(K.left + pos, st.vh - 7));
    else b.el.setAttribute('transform', tr(st.vw - 7, pos + 2));
    b.thumb.setAttribute(horizontal ? 'width' : 'height', len.toFixed(1));
  }
  function resize() {
    st.vw = window.innerWidth;
    st.vh = window.innerHeight;
    root.setAttribute('viewBox', '0 0 ' + st.vw + ' ' + st.vh);
    var bg = document.getElementById('gantt-background');
    bg.setAttribute('width', st.vw);
    bg.setAttribute('height', st.vh);
    ui.toolbar.setAttribute('transform', tr(st.vw - ui.toolbarWidth - 12, st.vh - 40));
    place();
  }
  function zoom(k, vx) {
    k = clamp(k, Math.min(1, fitK()), 64);
    if (vx === undefined) vx = (K.left + st.vw) / 2;
    vx = Math.max(vx, K.left);
    var at = (vx + st.sx - K.left) / (span0 * st.k);
    st.k = k;
    st.sx = at * span0 * k + K.left - vx;
    root.querySelector('#gantt-axis-strip').setAttribute('width', chartWidth() - K.left + 1);
    clampView();
    stretch();
    relabel();
    reticks();
    place();
  }

  // ---- Input
  function button(g, x, text, title, action) {
    var w = Math.max(24, text.length * 7 + 12), b = make('g', {'class': 'gantt-button', cursor: 'pointer'});
    b.appendChild(make('title', {}, title));
    b.appendChild(make('rect', {x: x, y: 4, width: w, height: 20, rx: 3, fill: '#FFFFFF', stroke: '#999999'}));
    b.appendChild(make('text', {x: x + w / 2, y: 18, 'font-size': 12, 'text-anchor': 'middle', fill: '#1A1A1A'}, text));
    b.addEventListener('mousedown', function (e) { e.stopPropagation(); });
    b.addEventListener('click', function (e) { e.stopPropagation(); action(); });
    g.appendChild(b);
    return x + w + 4;
  }
  function buildUi() {
    var g = make('g', {id: 'gantt-ui'}), bar0 = K.plotTop - K.axisTop - 2;
    ui.corner = make('rect', {x: 0, y: 0, width: K.left - 1, height: bar0, fill: '#FFFFFF'});
    g.appendChild(ui.corner);
    var tb = make('g', {}), x = 6;
    tb.appendChild(make('rect', {x: 0, y: 0, width: 10, height: 28, rx: 4, fill: '#FFFFFF', 'fill-opacity': 0.92,
                                 stroke: '#BBBBBB'}));
    x = button(tb, x, '\u2212', 'zoom out (key -)', function () { zoom(st.k / 1.5); });
    x = button(tb, x, '+', 'zoom in (key +)', function () { zoom(st.k * 1.5); });
    x = button(tb, x, 'fit', 'the whole schedule in the window (key f)', function () { zoom(fitK()); });
    x = button(tb, x, '1:1', 'as drawn (key 0)', function () { zoom(1); });
    ui.hint = 'time zoom: Ctrl+wheel \u00b7 pan: drag, wheel, Shift+wheel';
    tb.appendChild(make('text', {x: x + 2, y: 18, 'font-size': 10, fill: '#555555'}, ui.hint));
    ui.toolbarWidth = x + 8 + ui.hint.length * 10 * K.glyph;
    tb.firstChild.setAttribute('width', ui.toolbarWidth);
    ui.toolbar = tb;
    g.appendChild(tb);
    ui.hbar = scrollBar(g, true);
    ui.vbar = scrollBar(g, false);
    root.appendChild(g);
  }
  function scrollBar(g, horizontal) {
    var el = make('g', {cursor: 'pointer'}), b = {el: el};
    b.thumb = make('rect', {x: 0, y: 0, width: 5, height: 5, rx: 2.5, fill: '#777777', 'fill-opacity': 0.6});
    el.appendChild(b.thumb);
    el.addEventListener('mousedown', function (e) {
      e.stopPropagation();
      e.preventDefault();
      drag(e, function (dx, dy, s0) {
        var total = horizontal ? chartWidth() : H, view = horizontal ? st.vw : st.vh;
        var move = (horizontal ? dx : dy) * (total - view) / Math.max(1, b.track - b.len);
        if (horizontal) st.sx = s0.sx + move; else st.sy = s0.sy + move;
      });
    });
    g.appendChild(el);
    return b;
  }
  function drag(e, apply) {
    var x0 = e.clientX, y0 = e.clientY, s0 = {sx: st.sx, sy: st.sy};
    function moved(m) { apply(m.clientX - x0, m.clientY - y0, s0); place(); }
    function up() { window.removeEventListener('mousemove', moved); window.removeEventListener('mouseup', up); }
    window.addEventListener('mousemove', moved);
    window.addEventListener('mouseup', up);
  }
  function listen() {
    var pending = 1, anchor = 0, queued = false;
    window.addEventListener('wheel', function (e) {
      e.preventDefault();
      var unit = e.deltaMode === 1 ? 16 : (e.deltaMode === 2 ? st.vh : 1);
      if (e.ctrlKey || e.metaKey) {
        pending *= Math.exp(-e.deltaY * unit * 0.002);
        anchor = e.clientX;
        if (!queued) {
          queued = true;
          window.requestAnimationFrame(function () { queued = false; zoom(st.k * pending, anchor); pending = 1; });
        }
        return;
      }
      st.sx += (e.shiftKey ? e.deltaY : e.deltaX) * unit;
      st.sy += (e.shiftKey ? 0 : e.deltaY) * unit;
      place();
    }, {passive: false});
    root.addEventListener('mousedown', function (e) {
      if (e.button !== 0) return;
      e.preventDefault();
      drag(e, function (dx, dy, s0) { st.sx = s0.sx - dx; st.sy = s0.sy - dy; });
    });
    window.addEventListener('keydown', keys);
    window.addEventListener('resize', resize);
  }
  function keys(e) {
    var step = e.shiftKey ? 300 : 60, c = e.key;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (c === 'ArrowLeft') st.sx -= step;
    else if (c === 'ArrowRight') st.sx += step;
    else if (c === 'ArrowUp') st.sy -= step;
    else if (c === 'ArrowDown') st.sy += step;
    else if (c === 'PageUp') st.sy -= st.vh * 0.9;
    else if (c === 'PageDown' || c === ' ') st.sy += st.vh * 0.9;
    else if (c === 'Home') st.sx = 0;
    else if (c === 'End') st.sx = 1e12;
    else if (c === '+' || c === '=') return zoom(st.k * 1.5);
    else if (c === '-' || c === '_') return zoom(st.k / 1.5);
    else if (c === '0') return zoom(1);
    else if (c === 'f') return zoom(fitK());
    else return;
    e.preventDefault();
    place();
  }

  // ---- The view from the URL's fragment: #t=MS (time at the left edge), gpu=D or y=PX, zoom=K|fit
  function fromFragment() {
    var p = {};
    (window.location.hash || '').replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) p[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));
    });
    if (p.zoom === 'fit') zoom(fitK());
    else if (parseFloat(p.zoom) > 0) zoom(parseFloat(p.zoom));
    if (parseFloat(p.t) >= 0) st.sx = span0 * st.k * parseFloat(p.t) / K.end;
    if (parseInt(p.gpu, 10) >= 0 && K.rows.length) {
      st.sy = K.rows[Math.min(K.rows.length - 1, parseInt(p.gpu, 10))] - (K.plotTop - K.axisTop) - 4;
    } else if (parseFloat(p.y) >= 0) st.sy = parseFloat(p.y);
  }

  remember();
  buildUi();
  root.setAttribute('width', '100%');
  root.setAttribute('height', '100%');
  root.setAttribute('preserveAspectRatio', 'xMinYMin meet');
  root.style.userSelect = 'none';
  resize();
  fromFragment();
  place();
  listen();
  root.setAttribute('data-view', 'ready');
)JS";

std::string number(double v) { return fixed(v, 2); }

std::string lane_colour(Rgb c) { return "'" + hex(darken(c, kLaneDarken)) + "'"; }

// The script's K: the plot's geometry, the label rule's constants and the rows' tops.
std::string script_config(const Chart& c) {
  std::string rows;
  for (const DeviceRows& r : c.rows) rows += (rows.empty() ? "" : ",") + number(r.top);
  return "{left: " + number(c.axis.left) + ", right: " + number(c.axis.right) + ", end: " +
         fixed(c.axis.end, 9) + ", plotTop: " + number(c.plot_top) + ", plotBottom: " + number(c.plot_bottom) +
         ", axisTop: " + number(c.axis_top) + ", microbatches: " + std::to_string(c.inst.microbatches) +
         ", glyph: " + number(kGlyphEm) + ", maxFont: " + number(kMaxBoxFont) + ", minFont: " +
         number(kMinBoxFont) + ", pad: " + number(kBoxPad) + ", laneFont: " + number(kLaneFont) +
         ", laneGap: " + number(kLaneGapPx) + ", maxCollisions: " + number(kMaxLaneCollisions) + ", laneDy: " + number(kLaneBaselineAboveBox) +
         ", xferFont: " + number(kMaxTransferFont) + ", gridColour: '" + kGrid + "', laneColour: {F: " +
         lane_colour(kForward) + ", B: " + lane_colour(kBackward) + ", W: " + lane_colour(kWeight) +
         "}, rows: [" + rows + "]}";
}

}  // namespace

std::string script_element(const Chart& c) {
  return std::string("<script type=\"application/ecmascript\"><![CDATA[\n(function (K) {\n") + kScript +
         "})(" + script_config(c) + ");\n]]></script>\n";
}

}  // namespace optpipe::gantt
