// A session's stored messages (session.preview) as display items, the web twin of
// gsv_cli/tui/transcript.py. Stored shapes (gsv_core/protocol/messages.py):
//   user       {content: string | [text | image], timestamp}
//   assistant  {content: [text | thinking | toolCall], stopReason, errorMessage?, timestamp}
//   toolResult {toolCallId, toolName, content, isError, timestamp}
//   summary    {content, timestamp}   (compaction)
// Items: {kind: "user"|"assistant"|"tool"|"notice", ts, ...}.

/** Display items of stored messages, each tool call settled by its result. */
export function historyItems(messages) {
  const items = [];
  const calls = new Map();
  for (const message of messages || []) {
    const ts = typeof message.timestamp === "number" ? message.timestamp : null;
    if (message.role === "user") {
      items.push({ kind: "user", ts, text: userText(message.content), images: imagesOf(message.content) });
    } else if (message.role === "assistant") {
      items.push(...assistantItems(message, calls, ts));
    } else if (message.role === "toolResult") {
      settle(message, calls, items, ts);
    } else if (message.role === "summary") {
      items.push({ kind: "notice", ts, level: "system", text: "Earlier messages were compacted into a summary." });
    }
  }
  return items;
}

function assistantItems(message, calls, ts) {
  const blocks = Array.isArray(message.content) ? message.content : [];
  const items = [];
  const thinking = thinkingOf(message);
  const text = replyText(message);
  if (text.trim() || thinking.trim()) items.push({ kind: "assistant", ts, text, thinking });
  for (const block of blocks) {
    if (block && block.type === "toolCall") {
      const call = { callId: String(block.id), name: String(block.name), args: block.arguments ?? {}, ok: null, result: "" };
      calls.set(call.callId, call);
      items.push({ kind: "tool", ts, call });
    }
  }
  if (message.stopReason === "error" && message.errorMessage) {
    items.push({ kind: "notice", ts, level: "error", text: String(message.errorMessage) });
  }
  return items;
}

function settle(message, calls, items, ts) {
  let call = calls.get(String(message.toolCallId));
  if (!call) {
    // its call was compacted away: show the result on its own
    call = { callId: String(message.toolCallId), name: String(message.toolName ?? "?"), args: {} };
    items.push({ kind: "tool", ts, call });
  }
  call.ok = !message.isError;
  call.result = contentText(message.content);
}

/** The text of an assistant message, its text blocks joined as the deltas were. */
export function replyText(message) {
  const content = message && message.content;
  if (typeof content === "string") return content;
  return (Array.isArray(content) ? content : [])
    .filter((b) => b && b.type === "text")
    .map((b) => String(b.text ?? ""))
    .join("");
}

/** The reasoning of an assistant message (its thinking blocks), or "". */
export function thinkingOf(message) {
  const content = message && message.content;
  return (Array.isArray(content) ? content : [])
    .filter((b) => b && b.type === "thinking")
    .map((b) => String(b.thinking ?? ""))
    .join("\n\n");
}

/** Text of string or block content; images become a placeholder. */
export function contentText(content) {
  if (typeof content === "string") return content;
  const parts = [];
  for (const block of Array.isArray(content) ? content : []) {
    if (block && block.type === "text") parts.push(String(block.text ?? ""));
    else if (block && block.type === "image" && !parts.some((p) => p.includes("Image file:"))) {
      parts.push(`[image · ${block.mimeType ?? "?"}]`);
    }
  }
  return parts.filter(Boolean).join("\n");
}

/** A user message's own words (its images are shown beside them, not as text). */
function userText(content) {
  if (typeof content === "string") return content;
  return (Array.isArray(content) ? content : [])
    .filter((b) => b && b.type === "text")
    .map((b) => String(b.text ?? ""))
    .join("\n");
}

function imagesOf(content) {
  return (Array.isArray(content) ? content : [])
    .filter((b) => b && b.type === "image")
    .map((b) => String(b.mimeType ?? "image"));
}
