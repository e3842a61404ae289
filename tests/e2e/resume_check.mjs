// The AI SDK's resume path (what useChat({ resume: true }) runs): DefaultChatTransport.reconnectToStream
// GETs {api}/{chatId}/stream; readUIMessageStream rebuilds the UIMessage from the replayed stream.
// Usage: node resume_check.mjs BASE_URL CHAT_ID TOKEN. Prints {"connected"} once the stream is open
// (the test then lets the held run go on), then {"message", "afterEnd"}: afterEnd is true when a
// reconnect after the run's end finds no stream (204).
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [base, chatId, token] = process.argv.slice(2);
const transport = new DefaultChatTransport({
  api: base + "/api/chat",
  headers: { Authorization: `Bearer ${token}` },
});
const stream = await transport.reconnectToStream({ chatId });
console.log(JSON.stringify({ connected: stream !== null }));
let message = null;
if (stream !== null) {
  for await (const m of readUIMessageStream({ stream })) message = m;
}
const again = await transport.reconnectToStream({ chatId });
console.log(JSON.stringify({ message, afterEnd: again === null }));
