// check-speedscope.js: open profiles in the real speedscope (the npm package,
// vendored into build/profview) in headless Chromium, loaded through its own
// file input, and check what it shows.
//
//   node check-speedscope.js --speedscope DIR/index.html
//        [--shots DIR] FILE:PROFILE1|PROFILE2:FRAME1|FRAME2 ...
//
// For every FILE: speedscope imports it with no console error and no uncaught
// exception; its profile list (the toolbar's selector) shows every PROFILE
// name, and its Sandwich view, the table of functions of the first profile,
// lists every FRAME name (for a trace event, followed by its args; a FRAME
// ending in * is a prefix). A PROFILE is a part of a name. Prints PASS/FAIL lines; exits 1 when any failed.
"use strict";
const path = require("path");
const url = require("url");
const { chromium } = require("playwright-core");

const TIMEOUT_MS = 20000;
let failures = 0;
function pass(msg) { console.log("PASS " + msg); }
function fail(msg) { failures++; console.log("FAIL " + msg); }

function parseArgs(argv) {
  const o = { speedscope: null, shots: null, files: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--speedscope") o.speedscope = argv[++i];
    else if (argv[i] === "--shots") o.shots = argv[++i];
    else {
      const [file, profiles, frames] = argv[i].split(":");
      o.files.push({ file, profiles: profiles ? profiles.split("|") : [], frames: frames ? frames.split("|") : [] });
    }
  }
  if (!o.speedscope || !o.files.length) {
    console.error("usage: node check-speedscope.js --speedscope INDEX.html FILE:PROFILES:FRAMES...");
    process.exit(2);
  }
  return o;
}

const text = (page) => page.evaluate(() => document.body.innerText);

// The profile names speedscope offers: the toolbar's, and with more than one
// profile, its selector's list (opened by a click on the name).
async function profileNames(page) {
  let shown = await text(page);
  const many = page.getByText(/\(1\/\d+\)/);
  if (await many.count()) {
    await many.first().click();
    await page.waitForTimeout(300);
    shown = await text(page);
    await page.keyboard.press("Escape");
  }
  return shown;
}

async function checkFile(browser, o, f) {
  const name = path.basename(f.file);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
  page.on("pageerror", (e) => errors.push("exception: " + e.message));
  await page.goto(url.pathToFileURL(path.resolve(o.speedscope)).href, { timeout: TIMEOUT_MS });
  await page.waitForSelector("input[type=file]", { state: "attached", timeout: TIMEOUT_MS });
  await page.setInputFiles("input[type=file]", path.resolve(f.file));
  try {
    await page.getByText("Sandwich").first().waitFor({ timeout: TIMEOUT_MS });
  } catch (e) {
    fail(`speedscope ${name}: not imported within ${TIMEOUT_MS} ms (${errors.join("; ") || (await text(page)).slice(0, 200)})`);
    await page.close();
    return;
  }
  const shown = await profileNames(page);
  const missing = f.profiles.filter((p) => !shown.includes(p));
  if (missing.length) fail(`speedscope ${name}: profiles not shown: ${missing.join(", ")}`);
  else pass(`speedscope ${name}: ${f.profiles.length} profiles shown (${f.profiles.join(", ")})`);
  await page.keyboard.press("3"); // the Sandwich view
  await page.waitForTimeout(500);
  const table = await text(page);
  // A trace event's name is followed by its args in speedscope's table.
  const rows = table.split("\n").map((l) => l.trim());
  const has = (fr) => fr.endsWith("*") ? rows.some((l) => l.startsWith(fr.slice(0, -1)))
    : rows.some((l) => l === fr || l.startsWith(fr + " {"));
  const absent = f.frames.filter((fr) => !has(fr));
  if (!table.includes("Symbol Name")) fail(`speedscope ${name}: no sandwich table`);
  else if (absent.length) fail(`speedscope ${name}: frames not in the sandwich table: ${absent.join(", ")}`);
  else pass(`speedscope ${name}: the sandwich table lists ${f.frames.join(", ")}`);
  if (o.shots) await page.screenshot({ path: path.join(o.shots, "speedscope-" + name + ".png") });
  if (errors.length) fail(`speedscope ${name}: ${errors.length} console errors: ${errors.slice(0, 3).join("; ")}`);
  else pass(`speedscope ${name}: no console error, no exception`);
  await page.close();
}

(async () => {
  const o = parseArgs(process.argv.slice(2));
  const watchdog = setTimeout(() => { console.log("FAIL speedscope: watchdog"); process.exit(1); }, 90000);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    for (const f of o.files) await checkFile(browser, o, f);
  } finally {
    await browser.close();
    clearTimeout(watchdog);
  }
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.log("FAIL speedscope: " + e.message); process.exit(1); });
