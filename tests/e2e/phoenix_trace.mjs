// Screenshots one trace as Arize Phoenix's UI draws it, in headless Chromium (Debian's /usr/bin/chromium
// through playwright-core; no browser download). Used by
// plugins/hookstream-otel/tests/test_phoenix_screenshot.py to make docs/_static/otel-demo-trace.png.
//
//   node phoenix_trace.mjs PHOENIX_URL TRACE_ID OUT_PNG SPAN_NAME...
//
// Opens PHOENIX_URL/redirects/traces/TRACE_ID (Phoenix's own link to a trace: it redirects to the
// project's trace page), waits until every SPAN_NAME is shown as text in the span tree and the page is
// quiet, then saves a screenshot of the viewport to OUT_PNG. Prints one JSON document on stdout:
// {ok, url (where the redirect led), shown (SPAN_NAMEs found), consoleErrors, error?}.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, traceId, out, ...names] = process.argv.slice(2);
const userDataDir = mkdtempSync(join(tmpdir(), "hookstream-chromium-"));
const result = { ok: false, shown: [], consoleErrors: [] };

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1400, height: 860 },
  colorScheme: "light",
});
try {
  const page = context.pages()[0] || (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") result.consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => result.consoleErrors.push(String(e)));
  await page.goto(`${base}/redirects/traces/${traceId}`);
  // Liveness bound only: the UI is a large bundle and the machine may be busy.
  await page.waitForFunction((want) => {
    const text = document.body ? document.body.innerText : "";
    return want.every((n) => text.includes(n));
  }, names, { timeout: 120000, polling: 250 });
  await page.waitForLoadState("networkidle", { timeout: 60000 }).catch(() => {});
  const text = await page.evaluate(() => document.body.innerText);
  result.shown = names.filter((n) => text.includes(n));
  result.url = page.url();
  await page.screenshot({ path: out });
  result.ok = result.shown.length === names.length;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));
