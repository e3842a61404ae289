// hookstream's POST /api/chat read by the Vercel AI SDK's own client code (the `ai` package, pinned in
// package.json): DefaultChatTransport (the request body useChat sends, and its parser of the UI message
// stream), readUIMessageStream (rebuilds the UIMessage from the chunks), and AbstractChat, the class
// behind React's useChat, with addToolApprovalResponse and
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses.
//
// Usage: node ui_chat_check.mjs BASE_URL read|approve|deny [QUESTION [CHAT_ID]]
//   read:    POSTs through DefaultChatTransport.sendMessages; readUIMessageStream rebuilds the message
//            (the question, then the approval answered in the message, continuing that message).
//   approve: a Chat sends a question, gets a tool part in state approval-requested, answers it with
//            addToolApprovalResponse (approved), which POSTs the messages back; the tool's output follows.
//   deny:    the same, denied.
// Prints one JSON object: {chunks, message, requests, messages, status, errors}.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
} from "ai";

const [base, mode, text, chatId] = process.argv.slice(2);
const api = `${base}/api/chat`;
const requests = [];
const errors = [];

// Records each request body the transport sends, then sends it.
const recordingFetch = async (url, init) => {
  requests.push(JSON.parse(init.body));
  return fetch(url, init);
};

const question = {
  id: "user-1",
  role: "user",
  parts: [{ type: "text", text: text || "What is the weather in Paris, and what is 250 EUR in JPY?" }],
};

// One POST through the transport; readUIMessageStream rebuilds the message (continuing `message`).
async function post(transport, chatId, messages, message) {
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: "submit-message",
    messageId: message?.id,
    abortSignal: undefined,
  });
  const [forReader, forLog] = stream.tee();
  const chunks = [];
  const logged = (async () => {
    for await (const chunk of forLog) chunks.push(chunk);
  })();
  let rebuilt;
  for await (const m of readUIMessageStream({
    message,
    stream: forReader,
    onError: (e) => errors.push(String(e)),
    terminateOnError: true,
  })) {
    rebuilt = m;
  }
  await logged;
  return { chunks, message: rebuilt };
}

// The demo's question, then (serve --demo asks before convert_currency) the approval in the message
// form useChat's addToolApprovalResponse produces, continuing the same assistant message.
async function read() {
  const transport = new DefaultChatTransport({ api, fetch: recordingFetch });
  const id = chatId || "chat-read";
  const first = await post(transport, id, [question]);
  const answered = structuredClone(first.message);
  for (const part of answered.parts) {
    if (part.state === "approval-requested") {
      part.state = "approval-responded";
      part.approval = { ...part.approval, approved: true };
    }
  }
  const second = await post(transport, id, [question, answered], answered);
  return { first, chunks: second.chunks, message: second.message, requests, errors };
}

// The ChatState React's useChat keeps, without React.
class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) {
    this.messages = this.messages.concat(m);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class NodeChat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new State() });
  }
}

async function approval(approved) {
  let finished;
  const chat = new NodeChat({
    id: chatId || `chat-${approved ? "approve" : "deny"}`,
    transport: new DefaultChatTransport({ api, fetch: recordingFetch }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => errors.push(String(e)),
    onFinish: () => finished && finished(),
  });
  await chat.sendMessage({ text: question.parts[0].text });
  const first = structuredClone(chat.messages);
  const assistant = chat.messages[chat.messages.length - 1];
  const asking = assistant.parts.find((p) => p.state === "approval-requested");
  if (!asking) {
    return { error: "no tool part in state approval-requested", messages: first, requests, errors };
  }
  const done = new Promise((resolve) => {
    finished = resolve;
  });
  await chat.addToolApprovalResponse({
    id: asking.approval.id,
    approved,
    reason: approved ? undefined : "not today",
  });
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("no answer to the approval within 30 s")), 30000);
  });
  try {
    await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
  return { first, messages: chat.messages, status: chat.status, requests, errors };
}

const result = mode === "read" ? await read() : await approval(mode === "approve");
process.stdout.write(JSON.stringify(result));
