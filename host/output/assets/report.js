// Draws the charts described by the JSON in #data with uPlot. The series are prepared by
// html/charts.rs, so this only maps them onto uPlot's options. Each chart is built on its own: one that
// fails is reported (errors.js) and the others are still drawn.
(function () {
  "use strict";
  var fail = window.loadhostFail || function (message) { throw new Error(message); };
  var data = JSON.parse(document.getElementById("data").textContent);
  var HEIGHT = 240;
  var plots = [];
  var shading = data.shading || { bands: [], charts: [] };
  var shaded = 0;

  // Fills a band over each interval where the generator was degraded or saturated (html/generator.rs),
  // before the series are drawn so the lines stay on top. Canvas pixels, clipped to the plot area.
  function shade(u) {
    var ctx = u.ctx, box = u.bbox;
    ctx.save();
    shading.bands.forEach(function (b) {
      var left = Math.max(u.valToPos(b.from, "x", true), box.left);
      var right = Math.min(u.valToPos(b.to, "x", true), box.left + box.width);
      if (!(right > left)) return;
      ctx.fillStyle = b.color;
      ctx.fillRect(left, box.top, right - left, box.height);
    });
    ctx.restore();
  }

  function number(value) {
    if (value === null || value === undefined) return "–";
    var abs = Math.abs(value);
    if (abs >= 100 || Number.isInteger(value)) return value.toFixed(0);
    if (abs >= 1) return value.toFixed(2);
    return value.toFixed(3);
  }

  function width(el) {
    return Math.max(320, el.clientWidth || 900);
  }

  // Bars stacked by running sums (html/phases.rs): each series is drawn to its sum, top segment
  // first, and the legend shows the segment's own value.
  function stacked(chart, el) {
    var series = [{ label: "percentile", value: function (u, v) { return v === null ? "–" : chart.ticks[v]; } }];
    var columns = [chart.x];
    chart.series.forEach(function (s) {
      series.push({
        label: s.label,
        stroke: s.color,
        fill: s.color,
        width: 0,
        paths: uPlot.paths.bars({ size: [0.5, 120] }),
        points: { show: false },
        value: function (u, v, si, i) { return i === null || i === undefined ? "–" : number(s.own[i]); },
      });
      columns.push(s.values);
    });
    var opts = {
      width: width(el),
      height: HEIGHT,
      scales: { x: { time: false, range: [-0.5, 1.5] }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; } } },
      axes: [
        { splits: function () { return chart.x; }, values: function () { return chart.ticks; } },
        { label: chart.unit, size: 64 },
      ],
      series: series,
      legend: { live: true },
    };
    return new uPlot(opts, columns, el);
  }

  data.charts.forEach(function (chart) {
    try {
      var el = document.getElementById(chart.id);
      if (chart.kind === "stacked") {
        plots.push({ el: el, plot: stacked(chart, el) });
        return;
      }
      var series = [{ label: "time (s)", value: function (u, v) { return v === null ? "–" : v.toFixed(1) + " s"; } }];
      var columns = [data.x];
      chart.series.forEach(function (s) {
        series.push({
          label: s.label,
          stroke: s.color,
          width: s.width || 1.5,
          dash: s.dash || undefined,
          spanGaps: true,
          points: { show: data.x.length <= 60, size: 4 },
          value: function (u, v) { return number(v); },
        });
        columns.push(s.values);
      });
      var opts = {
        width: width(el),
        height: HEIGHT,
        scales: { x: { time: false }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; } } },
        axes: [
          {
            label: "seconds since the start",
            values: function (u, ticks) { return ticks.map(function (t) { return t + "s"; }); },
          },
          { label: chart.unit, size: 64 },
        ],
        series: series,
        legend: { live: true },
        cursor: { drag: { x: true, y: false } },
      };
      if (shading.bands.length > 0 && shading.charts.indexOf(chart.id) >= 0) {
        opts.hooks = { drawClear: [shade] };
        shaded += shading.bands.length;
      }
      plots.push({ el: el, plot: new uPlot(opts, columns, el) });
    } catch (e) {
      fail("chart " + chart.id + ": " + ((e && e.stack) || e));
    }
  });
  document.body.dataset.charts = String(plots.length);
  // The bands set on the charts, for tests/browser/check_html.sh.
  document.body.dataset.shaded = String(shaded);

  var pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      plots.forEach(function (p) { p.plot.setSize({ width: width(p.el), height: HEIGHT }); });
    });
  });
})();
