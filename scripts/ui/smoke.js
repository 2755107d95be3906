// Drives the operator console (/ui) in a real browser: connect with the
// admin token, see the cascades and the queued item, answer it, find it
// among the answered ones. Run by scripts/ui-smoke.sh; exits 1 on failure.
"use strict";
const { chromium } = require("playwright-core");

async function main() {
  const [url, token, chrome, shot] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(url + "/ui");
  await page.fill("#token", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("#cascades table", { timeout: 10000 });
  await page.waitForSelector("#handoff textarea", { timeout: 10000 });
  if (await page.$$eval("#handoff b", (els) => els.length)) throw new Error("a user's message was rendered as HTML");
  await page.screenshot({ path: shot, fullPage: true });
  // Usable at 420 px: nothing wider than the window but the scrolling tables.
  await page.setViewportSize({ width: 420, height: 900 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  if (wide > 421) throw new Error("the page is " + wide + " px wide at a 420 px window");
  await page.setViewportSize({ width: 1100, height: 900 });
  await page.fill("#handoff textarea", "A person is on it.");
  await page.click("#handoff button");
  await page.waitForFunction(() => document.getElementById("handoff").textContent.includes("empty"));
  await page.click("#answered");
  await page.waitForFunction(() => document.getElementById("handoff").textContent.includes("A person is on it."));
  await browser.close();
  if (errors.length) throw new Error("browser errors: " + JSON.stringify(errors));
  console.log("ui smoke: ok (screenshot: " + shot + ")");
}

main().catch((e) => { console.error("ui smoke FAILED:", e.message || e); process.exit(1); });
