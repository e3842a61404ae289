// Checks hookstream's AG-UI output with the official @ag-ui/client, used by tests/test_agui_node.py.
//
//   node agui_check.mjs run URL INPUT_JSON_FILE   run HttpAgent against a hookstream server
//   node agui_check.mjs verify STREAMS_JSON_FILE  check recorded event streams ([{name, events}])
//
// Both pipe the events through the client's own enforceEvents() (schema enforcement: a malformed
// known field is fatal) and verifyEvents() (the protocol's ordering rules), in that order, as
// AbstractAgent does. Output: one JSON document on stdout.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { HttpAgent, enforceEvents, verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom } from "rxjs";
import { tap, toArray } from "rxjs/operators";

const now = () => performance.timeOrigin + performance.now(); // epoch milliseconds, sub-ms precision

async function runAgainstServer(url, inputFile) {
  const input = JSON.parse(readFileSync(inputFile, "utf-8"));
  const agent = new HttpAgent({ url });
  const arrivals = [];
  const events = [];
  try {
    await lastValueFrom(
      agent.run(input).pipe(
        tap(() => arrivals.push(now())), // arrival in the client, before any checking
        enforceEvents(),
        verifyEvents(),
        tap((ev) => events.push(ev)),
        toArray(),
      ),
    );
    return { ok: true, events, arrivals };
  } catch (err) {
    return { ok: false, error: String(err && err.message ? err.message : err), events, arrivals };
  }
}

async function verifyStreams(file) {
  const streams = JSON.parse(readFileSync(file, "utf-8"));
  const results = [];
  for (const { name, events } of streams) {
    try {
      const out = await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()));
      results.push({ name, ok: out.length === events.length, count: out.length, expected: events.length });
    } catch (err) {
      results.push({ name, ok: false, error: String(err && err.message ? err.message : err) });
    }
  }
  return { ok: results.every((r) => r.ok), results };
}

// enforceEvents() warns on stripped unknown properties; keep stdout for the JSON result only.
const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const [mode, ...args] = process.argv.slice(2);
let result;
if (mode === "run") result = await runAgainstServer(args[0], args[1]);
else if (mode === "verify") result = await verifyStreams(args[0]);
else {
  console.error("usage: agui_check.mjs run URL INPUT_FILE | verify STREAMS_FILE");
  process.exit(2);
}
result.warnings = warnings;
process.stdout.write(JSON.stringify(result));
