// Draws every .flame element of a profile page with d3-flame-graph, from the
// JSON tree named by its data-source attribute. A differential graph
// (data-kind="diff") colours each frame by its change: red grew, blue shrank.
// When the first drawing has settled the element gets data-rendered="1".
"use strict";
(function () {
  const TRANSITION_MS = 300;
  // d3-flame-graph 5's UMD build exports the chart as `default`.
  const newChart = flamegraph.default || flamegraph.flamegraph;

  function draw(el) {
    const tree = JSON.parse(document.getElementById(el.dataset.source).textContent);
    const width = Math.max(600, Math.floor(el.getBoundingClientRect().width));
    const chart = newChart()
      .width(width)
      .cellHeight(18)
      .transitionDuration(TRANSITION_MS)
      .minFrameSize(1)
      .sort(true)
      .title("");
    const details = document.getElementById(el.id + "-details");
    if (details) chart.setDetailsElement(details);
    const total = tree.value || 1;
    if (el.dataset.kind === "diff") {
      chart.setColorMapper(function (d, original) {
        return flamegraph.colorMapper.differentialColorMapper(d, original);
      });
      chart.label(function (d) {
        const x = d.data;
        return x.name + ": " + x.pa.toFixed(2) + "% -> " + x.pb.toFixed(2) + "% (" +
          (x.pb - x.pa >= 0 ? "+" : "") + (x.pb - x.pa).toFixed(2) + " points)";
      });
    } else {
      chart.label(function (d) {
        return d.data.name + ": " + d.value + " samples, " + (100 * d.value / total).toFixed(2) + "%";
      });
    }
    d3.select(el).datum(tree).call(chart);
    setTimeout(function () { el.dataset.rendered = "1"; }, 3 * TRANSITION_MS);
    return chart;
  }

  const charts = {};
  document.querySelectorAll(".flame").forEach(function (el) { charts[el.id] = draw(el); });
  document.querySelectorAll("input[data-for]").forEach(function (input) {
    input.addEventListener("input", function () {
      const chart = charts[input.dataset.for];
      if (input.value) chart.search(input.value); else chart.clear();
    });
  });
  document.querySelectorAll("button[data-reset]").forEach(function (button) {
    button.addEventListener("click", function () { charts[button.dataset.reset].resetZoom(); });
  });
})();
