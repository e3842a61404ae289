// hookstream chat page: a small AG-UI client in plain JS (no build step).
// It POSTs an AG-UI RunAgentInput to the page's own origin, reads the SSE answer frame by frame
// (`data: {json}` + blank line), shows text as it streams, tool calls with their state and results,
// and approval buttons when the run stops at an interrupt; the answer goes back as RunAgentInput.resume.
// The conversation is kept as AG-UI messages and sent whole with every run (the server is stateless).
"use strict";

const log = document.getElementById("log");
const form = document.getElementById("composer");
const promptBox = document.getElementById("prompt");
const sendBtn = document.getElementById("send");
const stopBtn = document.getElementById("stop");

const threadId = "thread-" + crypto.randomUUID();
const messages = [];          // AG-UI messages: user / assistant (content, toolCalls) / tool
const toolCards = new Map();  // toolCallId -> {el, call, argsText}
let controller = null;

function setStatus(status) { document.body.dataset.status = status; }
setStatus("idle");

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Markdown-lite for streamed text: **bold**, *italic* and `code` only, after escaping HTML. Re-rendering
// the whole message per delta is quadratic, so it runs at most once per animation frame.
function renderMarkdown(text) {
  const esc = text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return esc.replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>");
}
const dirty = new Set();
function markDirty(t) {
  if (dirty.size === 0) requestAnimationFrame(flushDirty);
  dirty.add(t);
}
function flushDirty() {
  for (const t of dirty) t.div.innerHTML = renderMarkdown(t.m.content || "");
  dirty.clear();
}

function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

// An attached image travels as an AG-UI 1.0 image part: {type: "image", source: {type: "data", value
// (base64, no data: prefix), mimeType}} (spec/1.0 InputContent; the older "binary" part is deprecated).
function addUserMessage(text, image) {
  const content = image
    ? [{ type: "text", text }, { type: "image", source: { type: "data", value: image.data, mimeType: image.mimeType } }]
    : text;
  messages.push({ id: "msg-" + crypto.randomUUID(), role: "user", content });
  const div = el("div", "msg user", text);
  if (image) {
    const img = document.createElement("img");
    img.src = `data:${image.mimeType};base64,${image.data}`;
    img.alt = image.filename;
    div.appendChild(img);
  }
  log.appendChild(div);
  scrollDown();
}

function readImage(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve({ mimeType: file.type || "application/octet-stream", data: url.slice(url.indexOf(",") + 1), filename: file.name });
    };
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

// --- one run --------------------------------------------------------------------------------------

function newRunState() {
  return { textEls: new Map(), current: null, interrupts: [], finished: false, error: null };
}

function assistantFor(state, messageId) {
  // The AG-UI assistant message a text block or tool call belongs to (one per model step).
  if (messageId) {
    let m = messages.find((x) => x.id === messageId);
    if (!m) { m = { id: messageId, role: "assistant", content: "" }; messages.push(m); }
    state.current = m;
    return m;
  }
  if (!state.current) {
    state.current = { id: "msg-" + crypto.randomUUID(), role: "assistant", content: "" };
    messages.push(state.current);
  }
  return state.current;
}

function toolCard(id, name) {
  const card = el("div", "tool");
  card.dataset.toolCallId = id;
  const head = el("div", "head");
  head.append(el("span", "badge", "tool"), el("span", "name", name), el("span", "state", "input-streaming"));
  const args = el("pre", "args", "");
  card.append(head, args);
  log.appendChild(card);
  setToolState(card, "input-streaming");
  return card;
}

function setToolState(card, state) {
  card.dataset.state = state;
  card.querySelector(".state").textContent = state;
}

function handle(ev, state) {
  switch (ev.type) {
    case "STEP_STARTED":
      state.current = null;
      break;
    case "TEXT_MESSAGE_START": {
      const m = assistantFor(state, ev.messageId);
      const div = el("div", "msg assistant streaming", "");
      div.dataset.messageId = ev.messageId;
      log.appendChild(div);
      state.textEls.set(ev.messageId, { div, m });
      break;
    }
    case "TEXT_MESSAGE_CONTENT": {
      const t = state.textEls.get(ev.messageId);
      if (t) { t.m.content = (t.m.content || "") + ev.delta; markDirty(t); }
      break;
    }
    case "TEXT_MESSAGE_END": {
      const t = state.textEls.get(ev.messageId);
      if (t) { dirty.delete(t); t.div.innerHTML = renderMarkdown(t.m.content || ""); t.div.classList.remove("streaming"); }
      break;
    }
    case "TOOL_CALL_START": {
      const known = toolCards.get(ev.toolCallId);
      if (known) { known.resumed = true; break; }  // a resumed run repeats the call it continues
      const m = assistantFor(state, ev.parentMessageId);
      const call = { id: ev.toolCallId, type: "function", function: { name: ev.toolCallName, arguments: "" } };
      (m.toolCalls = m.toolCalls || []).push(call);
      toolCards.set(ev.toolCallId, { el: toolCard(ev.toolCallId, ev.toolCallName), call });
      break;
    }
    case "TOOL_CALL_ARGS": {
      const c = toolCards.get(ev.toolCallId);
      if (c && !c.resumed) { c.call.function.arguments += ev.delta; c.el.querySelector(".args").textContent = c.call.function.arguments; }
      break;
    }
    case "TOOL_CALL_END": {
      const c = toolCards.get(ev.toolCallId);
      if (c && !c.resumed) {
        if (ev.input !== undefined) c.call.function.arguments = JSON.stringify(ev.input);
        setToolState(c.el, "input-complete");
      }
      break;
    }
    case "TOOL_CALL_RESULT": {
      const c = toolCards.get(ev.toolCallId);
      messages.push({ id: ev.messageId, role: "tool", toolCallId: ev.toolCallId, content: ev.content,
                      ...(ev.error ? { error: ev.error } : {}) });
      if (c) {
        const res = el("pre", "result", ev.content);
        c.el.appendChild(res);
        for (const f of ev.files || []) {  // files the tool returned (a screenshot)
          if (!(f.mediaType || "").startsWith("image/")) continue;
          const img = document.createElement("img");
          img.src = f.url || `data:${f.mediaType};base64,${f.data}`;
          img.alt = f.filename || "tool output";
          const box = el("div", "files", ""); box.appendChild(img); c.el.appendChild(box);
        }
        setToolState(c.el, ev.error ? "output-error" : "output-available");
      }
      state.current = null;
      break;
    }
    case "CUSTOM":
      if (ev.name === "approval-requested") {
        const v = ev.value || {};
        const c = toolCards.get(v.toolCallId);
        if (c) setToolState(c.el, "approval-requested");
      } else if (ev.name === "approval-responded") {
        // The server's approve callback answered; a denied call's error result follows.
        const v = ev.value || {};
        const c = toolCards.get(v.toolCallId);
        if (c) { c.el.dataset.approved = String(!!v.approved); setToolState(c.el, "approval-responded"); }
      } else if (ev.name === "source") {
        // A cited source: a link under the answer (url sources) or the document's title.
        const v = ev.value || {};
        let box = log.lastElementChild && log.lastElementChild.classList.contains("sources") ? log.lastElementChild : null;
        if (!box) { box = el("div", "sources", "Sources: "); log.appendChild(box); }
        if (v.url) {
          const a = document.createElement("a");
          a.href = v.url; a.target = "_blank"; a.rel = "noopener noreferrer";
          a.textContent = v.title || v.url;
          box.appendChild(a);
        } else {
          box.appendChild(el("span", "", v.title || "document"));
        }
      } else if (ev.name === "file") {
        // A file the model produced: images are shown, other files offered as a link.
        const v = ev.value || {};
        const src = v.url || `data:${v.mediaType};base64,${v.data}`;
        const box = el("div", "files", "");
        if ((v.mediaType || "").startsWith("image/")) {
          const img = document.createElement("img"); img.src = src; img.alt = v.filename || "generated image";
          box.appendChild(img);
        } else {
          const a = document.createElement("a"); a.href = src; a.download = v.filename || "file";
          a.textContent = v.filename || v.mediaType; box.appendChild(a);
        }
        log.appendChild(box);
      } else if (ev.name === "tool-call-repaired") {
        // repair_tool_call replaced the streamed name and arguments: show (and send back) the call that ran.
        const v = ev.value || {};
        const c = toolCards.get(v.toolCallId);
        if (c) {
          if (v.toolName) { c.call.function.name = v.toolName; c.el.querySelector(".name").textContent = v.toolName; }
          c.call.function.arguments = JSON.stringify(v.input ?? {});
          c.el.querySelector(".args").textContent = c.call.function.arguments;
        }
      }
      break;
    case "RUN_FINISHED": {
      state.finished = true;
      const outcome = ev.outcome || { type: "success" };
      if (outcome.type === "interrupt") state.interrupts = outcome.interrupts || [];
      const usage = (ev.usage || [])[0];
      const meta = el("div", "meta", `run ${outcome.type}` + (usage ? ` · ${usage.inputTokens ?? "?"} in / ${usage.outputTokens ?? "?"} out tokens` : ""));
      log.appendChild(meta);
      break;
    }
    case "RUN_ERROR":
      state.finished = true;
      state.error = ev.message;
      log.appendChild(el("div", "msg error", `Error (${ev.code || "error"}): ${ev.message}`));
      break;
    default:
      break;
  }
  scrollDown();
}

async function run(resume) {
  const input = { threadId, runId: "run-" + crypto.randomUUID(), messages, tools: [], context: [],
                  state: {}, forwardedProps: {} };
  if (resume) input.resume = resume;
  const state = newRunState();
  controller = new AbortController();
  setStatus("running");
  sendBtn.disabled = true; stopBtn.disabled = false;
  try {
    const resp = await fetch(location.pathname.replace(/[^/]*$/, ""), {
      method: "POST", signal: controller.signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(input),
    });
    if (!resp.ok) {
      const text = await resp.text();
      throw new Error(`HTTP ${resp.status}: ${text}`);
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data) handle(JSON.parse(data), state);
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") log.appendChild(el("div", "msg error", String(err)));
  } finally {
    controller = null;
    stopBtn.disabled = true;
    for (const t of state.textEls.values()) t.div.classList.remove("streaming");
  }
  if (state.interrupts.length) {
    askApproval(state.interrupts);
  } else {
    sendBtn.disabled = false;
    setStatus(state.error ? "error" : "done");
  }
}

// --- approval -------------------------------------------------------------------------------------

function askApproval(interrupts) {
  setStatus("awaiting-approval");
  const answers = new Map();
  for (const intr of interrupts) {
    const c = intr.toolCallId ? toolCards.get(intr.toolCallId) : null;
    const box = el("div", "approval");
    box.dataset.interruptId = intr.id;
    box.append(el("span", null, intr.message || `Allow ${c ? c.call.function.name : "this action"}?`));
    const yes = el("button", "approve", "Approve");
    const no = el("button", "deny", "Deny");
    yes.type = no.type = "button";
    box.append(yes, no);
    const decide = (approved) => {
      yes.disabled = no.disabled = true;
      box.querySelector("span").textContent = approved ? "Approved" : "Denied";
      if (c) setToolState(c.el, "approval-responded");
      answers.set(intr.id, { interruptId: intr.id, status: "resolved", payload: { approved } });
      if (answers.size === interrupts.length) run([...answers.values()]);
    };
    yes.addEventListener("click", () => decide(true));
    no.addEventListener("click", () => decide(false));
    (c ? c.el : log).appendChild(box);
  }
  scrollDown();
}

// --- composer -------------------------------------------------------------------------------------

const attachInput = document.getElementById("attach");
attachInput.addEventListener("change", () => {
  attachInput.parentElement.classList.toggle("has-file", attachInput.files.length > 0);
});

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = promptBox.value.trim();
  if (!text || controller) return;
  promptBox.value = "";
  const file = attachInput.files[0];
  let image = null;
  if (file) {
    try { image = await readImage(file); } catch (err) { log.appendChild(el("div", "msg error", `Cannot read ${file.name}: ${err}`)); }
    attachInput.value = "";
    attachInput.parentElement.classList.remove("has-file");
  }
  addUserMessage(text, image);
  run(null);
});
promptBox.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
});
stopBtn.addEventListener("click", () => { if (controller) controller.abort(); });
