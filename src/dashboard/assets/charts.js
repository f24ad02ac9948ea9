// Draws the page's charts with uPlot from the JSON block #chart-data: one per
// [data-chart] figure, resized with its container.
(function () {
  'use strict';
  var block = document.getElementById('chart-data');
  if (!block || typeof uPlot === 'undefined') return;
  var data = JSON.parse(block.textContent || '{}');

  function compact(value) {
    var abs = Math.abs(value);
    if (abs >= 1e9) return (value / 1e9).toFixed(abs >= 1e10 ? 0 : 1) + 'B';
    if (abs >= 1e6) return (value / 1e6).toFixed(abs >= 1e7 ? 0 : 1) + 'M';
    if (abs >= 1e3) return (value / 1e3).toFixed(abs >= 1e4 ? 0 : 1) + 'k';
    return String(Math.round(value * 100) / 100);
  }
  // Money arrives in integer micro-USD; dividing here is for display only.
  function usd(micros) { return '$' + (micros / 1e6).toFixed(micros % 10000 === 0 ? 2 : 3); }

  document.querySelectorAll('[data-chart]').forEach(function (figure) {
    var series = data[figure.getAttribute('data-chart')];
    var target = figure.querySelector('.plot');
    if (!series || !target || series.x.length === 0) return;
    var format = series.unit === 'usd' ? usd : compact;
    var bars = series.kind === 'bars' && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 40] }) : undefined;
    var width = function () { return Math.max(260, Math.floor(target.getBoundingClientRect().width)); };
    var options = {
      width: width(),
      height: 220,
      // Counts and money start at zero; an empty period still shows a readable axis.
      scales: { x: { time: true }, y: { range: function (_u, _min, max) { return [0, max > 0 ? max * 1.1 : series.unit === 'usd' ? 1e6 : 10]; } } },
      series: [
        {},
        {
          label: series.label,
          stroke: '#1d4ed8',
          width: 2,
          fill: 'rgba(29, 78, 216, 0.12)',
          paths: bars,
          points: { show: series.kind !== 'bars' && series.x.length <= 48 },
          value: function (_u, v) { return v == null ? '–' : format(v); },
        },
      ],
      axes: [{}, { size: 60, values: function (_u, values) { return values.map(format); } }],
    };
    var plot = new uPlot(options, [series.x, series.y], target);
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(function () { plot.setSize({ width: width(), height: 220 }); }).observe(target);
    }
  });
})();
