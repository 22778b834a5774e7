// check-pages.js: open profile pages in headless Chromium (the Debian
// package) from file:// and check what they draw.
//
//   node check-pages.js --folded FILE --frames main,ct_left,ct_leaf
//                       [--before FILE] [--sandwich FUNC] [--shots DIR] PAGE.html...
//
// For every page: no console error, no uncaught exception, no request
// leaving file://; a flame graph is drawn; every frame named in --frames is
// drawn once per stack prefix of FILE that ends in it, and its rendered width
// (the SVG rect's on-screen width over the root's) is within 2 points of its
// share of FILE's samples. With --before (a differential graph, whose
// widths are the second profile, FILE), a frame whose share grew since the
// --before profile must be drawn red and one that shrank blue. Prints
// With --sandwich, a page's sandwich view picks FUNC and must draw its
// callers and callees at their shares of FUNC's samples in FILE; a page with
// a time view must hold every sample once in its CPU rows and once in its
// process rows. With --static, each page is opened again as a screenshot
// or a printout takes it, with the page's clock stopped (Playwright's
// page.clock: no timer and no animation frame advances): PAGE?static must be
// drawn whole at once (scripts/profview/pictures.js:flameDefects), and in
// print media its controls hidden and its folded stacks unclipped.
// Prints PASS/FAIL lines; exits 1 when any failed.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const url = require("url");
const { chromium } = require("playwright-core");
const { flameDefects } = require("../../scripts/profview/pictures.js");

const TOLERANCE = 2; // percentage points
const PAGE_TIMEOUT_MS = 20000;
const WATCHDOG_MS = 90000;

function parseArgs(argv) {
  const o = { pages: [], frames: [], shots: null, folded: null, before: null, sandwich: null, static: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--folded") o.folded = argv[++i];
    else if (argv[i] === "--frames") o.frames = argv[++i].split(",");
    else if (argv[i] === "--shots") o.shots = argv[++i];
    else if (argv[i] === "--before") o.before = argv[++i];
    else if (argv[i] === "--sandwich") o.sandwich = argv[++i];
    else if (argv[i] === "--static") o.static = true;
    else o.pages.push(argv[i]);
  }
  if (!o.folded || !o.pages.length || !o.frames.length) {
    console.error("usage: node check-pages.js --folded FILE --frames A,B,C [--shots DIR] PAGE...");
    process.exit(2);
  }
  return o;
}

// {"main;ct_left": percent of all samples of stacks starting with that path}
function prefixShares(folded) {
  const sums = new Map();
  let total = 0;
  for (const line of fs.readFileSync(folded, "utf8").split("\n")) {
    const m = /^(.+) (\d+)$/.exec(line.trim());
    if (!m) continue;
    const n = Number(m[2]);
    total += n;
    const frames = m[1].split(";");
    for (let i = 1; i <= frames.length; i++) {
      const key = frames.slice(0, i).join(";");
      sums.set(key, (sums.get(key) || 0) + n);
    }
  }
  const out = new Map();
  for (const [k, v] of sums) out.set(k, (100 * v) / total);
  return out;
}

let failures = 0;
function pass(msg) { console.log("PASS " + msg); }
function fail(msg) { failures++; console.log("FAIL " + msg); }

async function checkPage(context, file, expected, before, frames, shots, sandwich) {
  const name = path.basename(file);
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
  page.on("pageerror", (e) => errors.push("exception: " + e.message));
  const started = Date.now();
  await page.goto(url.pathToFileURL(path.resolve(file)).href, { timeout: PAGE_TIMEOUT_MS });
  try {
    await page.waitForSelector('.flame[data-rendered="1"]', { timeout: PAGE_TIMEOUT_MS });
  } catch (e) {
    fail(`browser ${name}: no flame graph drawn within ${PAGE_TIMEOUT_MS} ms (${errors.join("; ")})`);
    await page.close();
    return;
  }
  // Every drawn frame: its path from the root (d3 keeps each node on its
  // element), its on-screen width and its label.
  const drawn = await page.evaluate(() => {
    const out = [];
    for (const g of document.querySelectorAll(".flame g.frame")) {
      const names = [];
      for (let d = g.__data__; d; d = d.parent) names.unshift(d.data.name);
      const rect = g.querySelector("rect").getBoundingClientRect();
      const label = g.querySelector("div");
      const fill = getComputedStyle(g.querySelector("rect")).fill.match(/\d+/g).map(Number);
      out.push({ path: names.slice(1).join(";"), width: rect.width, height: rect.height,
                 label: label ? label.textContent : "", fill });
    }
    return out;
  });
  if (shots) await page.screenshot({ path: path.join(shots, name.replace(/\.html$/, ".png")), fullPage: true });
  const ms = Date.now() - started;
  const root = drawn.find((f) => f.path === "");
  if (root && root.width > 100 && root.height > 0) pass(`browser ${name}: flame graph drawn, ${drawn.length} frames, root ${root.width.toFixed(0)} px wide (${ms} ms)`);
  else { fail(`browser ${name}: no root frame drawn`); await page.close(); return; }

  for (const frame of frames) {
    const want = [...expected.keys()].filter((k) => k.split(";").pop() === frame);
    if (!want.length) fail(`browser ${name}: ${frame} is in no stack of the folded file`);
    for (const key of want) {
      const got = drawn.filter((f) => f.path === key);
      if (got.length !== 1) { fail(`browser ${name}: frame ${key} drawn ${got.length} times`); continue; }
      const share = (100 * got[0].width) / root.width;
      const diff = Math.abs(share - expected.get(key));
      const text = `frame ${key} ${share.toFixed(2)}% wide, recorded ${expected.get(key).toFixed(2)}%`;
      if (diff <= TOLERANCE) pass(`browser ${name}: ${text}`);
      else fail(`browser ${name}: ${text} (more than ${TOLERANCE} points apart)`);
      if (got[0].label !== frame) fail(`browser ${name}: frame ${key} labelled '${got[0].label}'`);
      if (before) {
        const change = expected.get(key) - (before.get(key) || 0);
        const [r, , b] = got[0].fill;
        const colour = r > b + 20 ? "red" : b > r + 20 ? "blue" : "neutral";
        const want = change > 0.5 ? "red" : change < -0.5 ? "blue" : null;
        const msg = `frame ${key} changed ${change >= 0 ? "+" : ""}${change.toFixed(2)} points, drawn ${colour} rgb(${got[0].fill.join(",")})`;
        if (!want || colour === want) pass(`browser ${name}: ${msg}`);
        else fail(`browser ${name}: ${msg}, want ${want}`);
      }
    }
  }
  if (sandwich && await page.$("#sandwich-func")) await checkSandwich(page, name, sandwich);
  if (await page.$("#timeline")) await checkTimeline(page, name);
  if (errors.length) fail(`browser ${name}: ${errors.length} console errors: ${errors.join("; ")}`);
  else pass(`browser ${name}: no console errors`);
  await page.close();
}

// {name: share of FUNC's samples}: FUNC's callers (the frame before it) or
// callees (the frame after it) in the --folded file, at FUNC's first place.
function neighbours(folded, func, step) {
  const out = new Map();
  let total = 0;
  for (const line of fs.readFileSync(folded, "utf8").split("\n")) {
    const m = /^(.+) (\d+)$/.exec(line.trim());
    if (!m) continue;
    const frames = m[1].split(";");
    const i = frames.indexOf(func);
    if (i < 0) continue;
    total += Number(m[2]);
    const other = frames[i + step];
    if (other !== undefined) out.set(other, (out.get(other) || 0) + Number(m[2]));
  }
  for (const [k, v] of out) out.set(k, (100 * v) / total);
  return out;
}

// The sandwich view: pick FUNC; its callers' graph and its callees' graph
// are drawn with FUNC at the root, each caller and callee next to it as wide
// as its share of FUNC's samples in the folded file (within TOLERANCE).
async function checkSandwich(page, name, sandwich) {
  await page.selectOption("#sandwich-func", sandwich.func);
  for (const [kind, step] of [["callers", -1], ["callees", 1]]) {
    const sel = `#sandwich-${kind}[data-rendered="1"][data-func="${sandwich.func.replace(/"/g, '\\"')}"]`;
    try {
      await page.waitForSelector(sel, { timeout: PAGE_TIMEOUT_MS });
    } catch (e) {
      fail(`browser ${name}: sandwich ${kind} of ${sandwich.func} not drawn`);
      continue;
    }
    const drawn = await page.evaluate((id) => {
      const out = [];
      for (const g of document.querySelectorAll(id + " g.frame")) {
        const depth = g.__data__.depth;
        out.push({ name: g.__data__.data.name, depth, width: g.querySelector("rect").getBoundingClientRect().width });
      }
      return out;
    }, "#sandwich-" + kind);
    const root = drawn.find((f) => f.depth === 0);
    if (!root || root.name !== sandwich.func) { fail(`browser ${name}: sandwich ${kind}: root is not ${sandwich.func}`); continue; }
    const want = neighbours(sandwich.folded, sandwich.func, step);
    const bad = [];
    for (const [other, share] of want) {
      const got = drawn.filter((f) => f.depth === 1 && f.name === other);
      const w = got.length === 1 ? (100 * got[0].width) / root.width : -1;
      if (Math.abs(w - share) > TOLERANCE) bad.push(`${other} ${w.toFixed(2)}% (want ${share.toFixed(2)}%)`);
    }
    const list = [...want.keys()].join(", ") || "none";
    if (bad.length) fail(`browser ${name}: sandwich ${kind} of ${sandwich.func}: ${bad.join(", ")}`);
    else pass(`browser ${name}: sandwich of ${sandwich.func}: ${kind} ${list} drawn at their shares`);
  }
}

// The time view: a row per CPU and per process; each set of rows holds
// every sample once (the page's sample count).
async function checkTimeline(page, name) {
  const t = await page.evaluate(() => {
    const sum = { cpu: 0, pid: 0 }, rows = { cpu: new Set(), pid: new Set() };
    for (const r of document.querySelectorAll("#timeline rect.cell")) {
      sum[r.dataset.kind] += Number(r.dataset.count);
      rows[r.dataset.kind].add(r.dataset.row);
    }
    const total = Number(document.querySelector("table.summary td:nth-child(2)").textContent);
    return { sum, total, cpus: rows.cpu.size, pids: rows.pid.size };
  });
  if (t.total > 0 && t.sum.cpu === t.total && t.sum.pid === t.total && t.cpus > 0 && t.pids > 0)
    pass(`browser ${name}: time view: ${t.cpus} CPU rows and ${t.pids} process rows, each set holding all ${t.total} samples`);
  else fail(`browser ${name}: time view: CPU rows hold ${t.sum.cpu}, process rows ${t.sum.pid} of ${t.total} samples`);
}

// PAGE?static with time stopped: every flame graph drawn whole (no
// transition left to run), then as printed.
async function checkStatic(context, file) {
  const name = path.basename(file);
  const page = await context.newPage();
  await page.clock.install();
  await page.clock.pauseAt(Date.now() + 1000);
  await page.goto(url.pathToFileURL(path.resolve(file)).href + "?static", { timeout: PAGE_TIMEOUT_MS });
  const ids = await page.evaluate(() => [...document.querySelectorAll(".flame, .sandwich-flame")].map((e) => e.id));
  for (const id of ids) {
    const defect = await flameDefects(page, "#" + id);
    if (defect) fail(`browser ${name}?static: ${id}, time stopped: ${defect}`);
    else pass(`browser ${name}?static: ${id} drawn whole at once, with time stopped`);
  }
  // Printed on a page narrower than the screen it was drawn on (A4 is about
  // 700 CSS px between margins): nothing cut off at the right.
  await page.emulateMedia({ media: "print" });
  await page.setViewportSize({ width: 700, height: 900 });
  const printed = await page.evaluate(() => {
    const pre = document.querySelector("pre.folded"), input = document.querySelector("input, button");
    const right = document.documentElement.clientWidth;
    const cut = [...document.querySelectorAll("svg")].filter((s) => s.getBoundingClientRect().right > right + 1);
    return { controls: input ? getComputedStyle(input).display : "none",
             folded: pre ? getComputedStyle(pre).maxHeight : "none",
             cut: cut.map((s) => s.id || s.parentElement.id).join(", ") };
  });
  if (printed.controls === "none" && printed.folded === "none" && !printed.cut)
    pass(`browser ${name}: printed without its controls, the folded stacks unclipped, every view within the page`);
  else fail(`browser ${name}: printed with controls (display ${printed.controls}), clipped stacks (max-height ${printed.folded}) or views cut off (${printed.cut || "none"})`);
  await page.close();
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const watchdog = setTimeout(() => { console.log("FAIL browser: watchdog, more than " + WATCHDOG_MS + " ms"); process.exit(1); }, WATCHDOG_MS);
  const expected = prefixShares(o.folded);
  const before = o.before ? prefixShares(o.before) : null;
  if (o.shots) fs.mkdirSync(o.shots, { recursive: true });
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "pmc-chromium-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    timeout: 30000,
    viewport: { width: 1200, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const offline = [];
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith("file:") || u.startsWith("data:")) return route.continue();
    offline.push(u);
    return route.abort();
  });
  try {
    const sandwich = o.sandwich ? { func: o.sandwich, folded: o.folded } : null;
    for (const file of o.pages) await checkPage(context, file, expected, before, o.frames, o.shots, sandwich);
    if (o.static) for (const file of o.pages) await checkStatic(context, file);
  } finally {
    await context.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  if (offline.length) fail(`browser: pages asked the network for ${offline.join(", ")}`);
  else pass("browser: the pages asked for nothing beyond file://");
  clearTimeout(watchdog);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.log("FAIL browser: " + (e && e.message ? e.message.split("\n")[0] : e)); process.exit(1); });
