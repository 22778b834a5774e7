// Draws every .flame element of a profile page with d3-flame-graph, from the
// JSON tree named by its data-source attribute. A differential graph
// (data-kind="diff") colours each frame by its change: red grew, blue shrank.
// When the first drawing has settled the element gets data-rendered="1".
//
// A static rendering draws each graph at once, with no transition: a page
// asked for with "static" in its query or fragment (profile.html?static, for
// a screenshot: a transition caught halfway shows children wider than their
// parents and empty labels), a page loaded for printing, and a page about to
// be printed (the beforeprint event: HTML Living Standard, "Printing"). Even a
// transition of no duration runs on a later animation frame, so a static
// graph is finished by hand: each frame's transitions interrupted and its
// final width and label set (d3-flame-graph sets the frame's own width
// attribute at once; the rectangle and the label follow it).
"use strict";
(function () {
  const STATIC = /(^|[?&#])static\b/.test(location.search + location.hash) ||
    (window.matchMedia && window.matchMedia("print").matches);
  const TRANSITION_MS = STATIC ? 0 : 300;
  document.documentElement.dataset.static = STATIC ? "1" : "0";
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
    scalable(el);
    if (STATIC) finish(el);
    setTimeout(function () { el.dataset.rendered = "1"; }, STATIC ? 0 : 3 * TRANSITION_MS);
    return chart;
  }

  // A viewBox of the drawing's own size: the same on screen, and a printout
  // may scale it down to the page's width (page.css) instead of cutting it.
  function scalable(el) {
    const svg = el.querySelector("svg");
    if (svg) svg.setAttribute("viewBox", "0 0 " + svg.getAttribute("width") + " " + svg.getAttribute("height"));
  }

  // The graph in el as its transitions would leave it, now.
  function finish(el) {
    d3.select(el).selectAll("g.frame").each(function () {
      const g = d3.select(this).interrupt();
      g.select("rect").interrupt().attr("width", this.getAttribute("width"));
      g.select("div").interrupt().text(function (d) { return d.data.name; });
    });
  }

  // The sandwich view: the picked function's callers and callees, each a
  // tree made from the stacks that hold it (at its outermost place in a
  // recursive stack), drawn when the picker changes.
  function sandwichTrees(stacks, func) {
    const callers = { name: func, value: 0, children: [] };
    const callees = { name: func, value: 0, children: [] };
    function add(node, path, n) {
      node.value += n;
      for (const name of path) {
        let child = node.children.find(function (c) { return c.name === name; });
        if (!child) { child = { name: name, value: 0, children: [] }; node.children.push(child); }
        child.value += n;
        node = child;
      }
    }
    for (const [frames, n] of stacks) {
      const i = frames.indexOf(func);
      if (i < 0) continue;
      add(callers, frames.slice(0, i).reverse(), n);
      add(callees, frames.slice(i + 1), n);
    }
    return { callers: callers, callees: callees };
  }

  function drawSandwich() {
    const select = document.getElementById("sandwich-func");
    const source = document.getElementById("stacks");
    if (!select || !source) return;
    const trees = sandwichTrees(JSON.parse(source.textContent), select.value);
    for (const kind of ["callers", "callees"]) {
      const el = document.getElementById("sandwich-" + kind);
      el.dataset.rendered = "0";
      el.textContent = "";
      const tree = trees[kind];
      const chart = newChart()
        .width(Math.max(600, Math.floor(el.getBoundingClientRect().width)))
        .cellHeight(18)
        .transitionDuration(0)
        .minFrameSize(1)
        .sort(true)
        .inverted(kind === "callees")
        .title("")
        .label(function (d) {
          return d.data.name + ": " + d.value + " samples, " + (100 * d.value / (tree.value || 1)).toFixed(2) +
            "% of " + tree.name;
        });
      chart.setDetailsElement(document.getElementById("sandwich-details"));
      d3.select(el).datum(tree).call(chart);
      scalable(el);
      finish(el); // drawn with no transition: finished at once
      el.dataset.func = select.value;
      setTimeout(function () { el.dataset.rendered = "1"; }, 50);
    }
  }

  const charts = {};
  document.querySelectorAll(".flame").forEach(function (el) { charts[el.id] = draw(el); });
  document.querySelectorAll("input[data-for]").forEach(function (input) {
    input.addEventListener("input", function () {
      const chart = charts[input.dataset.for];
      if (input.value) chart.search(input.value); else chart.clear();
    });
  });
  const picker = document.getElementById("sandwich-func");
  if (picker) {
    picker.addEventListener("change", drawSandwich);
    drawSandwich();
  }
  window.addEventListener("beforeprint", function () {
    for (const id in charts) {
      charts[id].transitionDuration(0).update();
      finish(document.getElementById(id));
    }
  });
  document.querySelectorAll("button[data-reset]").forEach(function (button) {
    button.addEventListener("click", function () { charts[button.dataset.reset].resetZoom(); });
  });
})();
