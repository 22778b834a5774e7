// pictures.js: pictures of a profile page's views for slides and handouts.
//
//   node pictures.js OUTDIR PAGE.html...
//
// Opens each page in headless Chromium (the Debian package; CHROMIUM names
// another) from file:// with "?static" (page.js then draws every graph at
// once, with no transition), and writes into OUTDIR, for each view of the
// page (every flame graph, the sandwich's two, the time view):
// PAGE-VIEW.png (the view as it shows) and PAGE-VIEW.svg (its drawing, with
// the page's styles inside, for slides that scale); then PAGE.pdf, the whole
// page as it prints (page.css's print rules). Each view is checked before it
// is kept: drawn (a root frame over 100 px wide), every frame within its
// parent's width, and every frame wide enough for text labelled: what a
// screenshot of a page still in transition gets wrong. Prints one line per
// file and PASS/FAIL per view; exits 1 when a view failed, 3 (and says
// "skipped: WHY") when Chromium or playwright-core is missing. The check,
// flameDefects, is tests/browser/check-pages.js's --static check too.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const url = require("url");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const PAGE_TIMEOUT_MS = 20000;
const LABEL_MIN_PX = 40; // d3-flame-graph writes no label in a narrower frame

let failures = 0;

// The views of the page: [{id, selector}] of what is drawn.
async function views(page) {
  return page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll(".flame, .sandwich-flame"))
      if (el.id && el.querySelector("svg")) out.push({ id: el.id, selector: "#" + el.id });
    if (document.getElementById("timeline")) out.push({ id: "timeline", selector: "#timeline" });
    return out;
  });
}

// What is wrong with a flame view as drawn now: "" when nothing.
async function flameDefects(page, selector) {
  return page.evaluate(([sel, minPx]) => {
    const frames = [...document.querySelectorAll(sel + " g.frame")];
    if (!frames.length) return "";
    const widths = new Map(frames.map((g) => [g.__data__, g.querySelector("rect").getBoundingClientRect().width]));
    const root = frames.find((g) => !g.__data__.parent);
    if (!root || widths.get(root.__data__) <= 100) return "no root frame over 100 px wide";
    for (const g of frames) {
      const d = g.__data__, w = widths.get(d);
      if (d.parent && widths.has(d.parent) && w > widths.get(d.parent) + 0.5)
        return `${d.data.name} is wider than its parent (${w.toFixed(1)} > ${widths.get(d.parent).toFixed(1)} px)`;
      const label = g.querySelector("div");
      if (w >= minPx && (!label || !label.textContent)) return `${d.data.name} (${w.toFixed(0)} px) has no label`;
    }
    return "";
  }, [selector, LABEL_MIN_PX]);
}

// The view's SVG, standalone: its namespace and the page's styles inside.
async function svgText(page, selector) {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const svg = (el.tagName.toLowerCase() === "svg" ? el : el.querySelector("svg")).cloneNode(true);
    svg.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    const style = document.createElementNS("http://www.w3.org/2000/svg", "style");
    style.textContent = [...document.querySelectorAll("style")].map((s) => s.textContent).join("\n");
    svg.insertBefore(style, svg.firstChild);
    return new XMLSerializer().serializeToString(svg);
  }, selector);
}

async function pictures(context, file, out) {
  const base = path.basename(file).replace(/\.html$/, "");
  const page = await context.newPage();
  await page.goto(url.pathToFileURL(path.resolve(file)).href + "?static", { timeout: PAGE_TIMEOUT_MS });
  // page.js drew the graphs before load ended; one frame for the layout.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => done())));
  for (const v of await views(page)) {
    const defect = v.id === "timeline" ? "" : await flameDefects(page, v.selector);
    if (defect) {
      failures++;
      console.log(`FAIL pictures: ${base} ${v.id}: ${defect}`);
      continue;
    }
    const png = path.join(out, `${base}-${v.id}.png`), svg = path.join(out, `${base}-${v.id}.svg`);
    await page.locator(v.selector).screenshot({ path: png });
    fs.writeFileSync(svg, await svgText(page, v.selector));
    console.log(`PASS pictures: ${base} ${v.id}: drawn whole at once; wrote ${png} and ${svg}`);
  }
  const pdf = path.join(out, base + ".pdf");
  await page.emulateMedia({ media: "print" });
  await page.pdf({ path: pdf, format: "A4", printBackground: true, margin: { top: "1cm", bottom: "1cm", left: "1cm", right: "1cm" } });
  console.log(`pictures: wrote ${pdf} (the page as it prints)`);
  await page.close();
}

async function main() {
  let chromium;
  try {
    ({ chromium } = require("playwright-core"));
  } catch (e) {
    console.log("skipped: pictures: no playwright-core (make browser-vendor installs it)");
    process.exit(3);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.log("skipped: pictures: no Chromium at " + CHROMIUM + " (make deps-browser installs it)");
    process.exit(3);
  }
  const [out, ...pages] = process.argv.slice(2);
  if (!out || !pages.length) {
    console.error("usage: node pictures.js OUTDIR PAGE.html...");
    process.exit(2);
  }
  fs.mkdirSync(out, { recursive: true });
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "pmc-pictures-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM, headless: true, timeout: 30000, viewport: { width: 1200, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  try {
    for (const file of pages) await pictures(context, file, out);
  } finally {
    await context.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  process.exit(failures ? 1 : 0);
}

module.exports = { flameDefects };
if (require.main === module)
  main().catch((e) => { console.log("FAIL pictures: " + (e && e.message ? e.message.split("\n")[0] : e)); process.exit(1); });
