// Drives hookstream's chat page in headless Chromium (Debian's /usr/bin/chromium through playwright-core;
// no browser download), used by tests/test_browser_e2e.py.
//
//   node browser_chat.mjs URL ARTIFACTS_DIR
//
// Types a prompt, approves the tool that asks for approval, saves a screenshot while the answer is
// still streaming, waits for the final answer. Prints one JSON document on stdout.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, artifacts] = process.argv.slice(2);
const userDataDir = mkdtempSync(join(tmpdir(), "hookstream-chromium-"));
const result = { ok: false, steps: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1000, height: 760 },
});
try {
  const page = context.pages()[0] || (await context.newPage());
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  await page.goto(url);
  await page.fill("#prompt", "What's the weather in Paris, and how much is 250 EUR in yen?");
  await page.press("#prompt", "Enter");
  step("prompt sent");

  // Tool calls appear with their streaming arguments; one of them asks for approval.
  const approve = page.locator(".approval button.approve").first();
  await approve.waitFor({ timeout: 20000 });
  result.toolStatesBeforeApproval = await page.$$eval(".tool", (els) => els.map((e) => [e.querySelector(".name").textContent, e.dataset.state]));
  await page.screenshot({ path: join(artifacts, "chat-approval.png") });
  await approve.click();
  step("approved");

  // Mid-answer: the assistant text is streaming (cursor shown) and some text has arrived.
  await page.waitForFunction(() => {
    const m = document.querySelector(".msg.assistant.streaming");
    return m && m.textContent.length >= 40;
  }, null, { timeout: 20000, polling: 10 });
  await page.screenshot({ path: join(artifacts, "chat-mid-answer.png") });
  result.midAnswerText = await page.$eval(".msg.assistant.streaming", (e) => e.textContent).catch(() => null);
  step("mid-answer screenshot");

  await page.waitForFunction(() => ["done", "error"].includes(document.body.dataset.status), null, { timeout: 30000 });
  result.status = await page.evaluate(() => document.body.dataset.status);
  result.finalText = await page.$$eval(".msg.assistant", (els) => els.map((e) => e.textContent).join("\n"));
  result.toolStates = await page.$$eval(".tool", (els) => els.map((e) => [e.querySelector(".name").textContent, e.dataset.state]));
  result.toolResults = await page.$$eval(".tool .result", (els) => els.map((e) => e.textContent));
  await page.screenshot({ path: join(artifacts, "chat-final.png"), fullPage: true });
  step("final answer");
  result.consoleErrors = consoleErrors;
  result.ok = result.status === "done";
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));
