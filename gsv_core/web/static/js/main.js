// The page's entry point: builds the parts and wires them together. The gateway client
// (gateway.js) feeds the conversation (conversation.js, the chat) and the side panels;
// the header shows the connection and the model; a refused sign-in shows how to sign in.

import { h } from "./dom.js";
import { Gateway } from "./gateway.js";
import { Header } from "./header.js";
import { initTheme } from "./theme.js";
import { Tabs } from "./tabs.js";
import { ChatView } from "./chat.js";
import { Composer } from "./composer.js";
import { Conversation } from "./conversation.js";
import { searchResults } from "./search.js";
import { Attachments, isImage, uploadToWorkspace } from "./uploads.js";
import { SessionsPanel } from "./panels/sessions.js";
import { NodesPanel } from "./panels/nodes.js";
import { CronPanel } from "./panels/cron.js";
import { PairingPanel } from "./panels/pairing.js";
import { UsagePanel } from "./panels/usage.js";
import { ConfigPanel } from "./panels/config.js";

const PAIRING_EVERY_MS = 60000;
const $ = (id) => document.getElementById(id);

const gateway = new Gateway();
const header = new Header();
const SEARCH_LIMIT = 20;

initTheme(document.querySelector('[data-testid="theme-toggle"]'));

let conversation; // the view answers approvals through it
const view = new ChatView($("transcript"), { answer: (...args) => conversation.answer(...args) });
const attachments = new Attachments($("attachments"));
const composer = new Composer(
  { form: $("composer-form"), textarea: $("composer"), send: $("send"), stop: $("stop"), menu: $("slash-menu"), activity: $("activity") },
  { onSubmit: submit, onStop: () => conversation.stop() },
);
composer.canSendEmpty = () => attachments.count > 0;

function submit(text) {
  if (!text.trim()) {
    // images alone are refused by the gateway: a message needs words
    view.addNotice("Add a few words to go with the image: a message needs text.", "error");
    return;
  }
  conversation.send(text, attachments.take());
}

let tabs;
const openChat = () => tabs.select("chat");
conversation = new Conversation({ gateway, view, header, composer, local: runLocal });

const panels = {
  chat: { show: () => composer.focus() },
  sessions: new SessionsPanel($("panel-sessions"), gateway, { conversation, openChat }),
  nodes: new NodesPanel($("panel-nodes"), gateway),
  cron: new CronPanel($("panel-cron"), gateway),
  pairing: new PairingPanel($("panel-pairing"), gateway, showPairingCount),
  usage: new UsagePanel($("panel-usage"), gateway),
  config: new ConfigPanel($("panel-config"), gateway),
};
tabs = new Tabs({ nav: $("nav"), menuButton: document.querySelector('[data-testid="menu-button"]'), panels });

/** The commands the page answers itself (`/sessions`, `/switch KEY`, `/rename LABEL`,
 * `/search QUERY`). */
async function runLocal({ name, args }) {
  if (name === "sessions") tabs.select("sessions");
  else if (name === "switch" && !args) view.addNotice("Usage: /switch KEY (or pick one under Sessions)", "error");
  else if (name === "switch") await conversation.open(args);
  else if (name === "search" && !args) view.addNotice("Usage: /search QUERY", "error");
  else if (name === "search") await search(args);
  else if (name === "rename") {
    try {
      await conversation.rename(args);
      view.addNotice(args ? `Session labelled “${args}”.` : "Session label removed.");
    } catch (err) {
      view.addNotice(`Cannot rename: ${err.message}`, "error");
    }
  }
}

async function search(query) {
  let found;
  try {
    found = await gateway.call("memory.search", { query, limit: SEARCH_LIMIT });
  } catch (err) {
    view.addNotice(`Cannot search: ${err.message}`, "error");
    return;
  }
  view.addNotice(searchResults(query, found.results || [], openHit));
}

/** A search hit's session, scrolled to the message when it is still in the history. */
async function openHit(hit) {
  await conversation.open(String(hit.sessionKey));
  if (conversation.key !== String(hit.sessionKey) || conversation.reveal(hit.at)) return;
  const where = hit.archived ? ` It is archived in ${hit.archive}.` : "";
  view.addNotice(`That message is no longer in this session's history.${where}`);
}

function showPairingCount(count) {
  const badge = $("pairing-badge");
  badge.textContent = String(count);
  badge.hidden = count === 0;
}

// -- the connection ------------------------------------------------------------------
gateway.addEventListener("state", ({ detail: { state } }) => {
  header.showConnection(state);
  const signedOut = state === "signed-out";
  $("signed-out").hidden = !signedOut;
  $("app").hidden = signedOut;
  const banner = $("banner");
  banner.hidden = state !== "offline";
  banner.textContent = gateway.originRefused
    ? `The gateway is up but refuses connections from pages at ${location.origin}. ` +
      `To allow them, run on the gateway's machine: gsv config set gateway.allowedOrigins '["${location.origin}"]'`
    : conversation.loaded
      ? "The connection to the gateway was lost; reconnecting… The chat catches up when it is back."
      : "Cannot reach the gateway; retrying…";
  if (state === "connected") connected();
});

async function connected() {
  await conversation.load({ reconnect: conversation.loaded });
  const panel = panels[tabs.current];
  if (tabs.current !== "chat") panel.refresh();
  if (tabs.current !== "pairing") panels.pairing.load().catch(() => {});
}

gateway.addEventListener("event", ({ detail }) => {
  // another client changed the config: the config view shows it at once
  if (detail.event === "config.changed" && tabs.current === "config") panels.config.refresh();
});

setInterval(() => {
  if (gateway.connected) panels.pairing.load().catch(() => {});
}, PAIRING_EVERY_MS);

// -- keys, files and images ------------------------------------------------------------
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && tabs.current === "chat" && e.target !== $("composer")) conversation.stop();
});

$("file-input").addEventListener("change", async (e) => {
  await upload(Array.from(e.target.files));
  e.target.value = "";
});

$("image-input").addEventListener("change", async (e) => {
  await attach(Array.from(e.target.files));
  e.target.value = "";
});

$("composer").addEventListener("paste", (e) => {
  const images = Array.from(e.clipboardData?.files || []).filter(isImage);
  if (images.length) {
    e.preventDefault();
    attach(images);
  }
});

const chatPanel = $("panel-chat");
let dragDepth = 0;
chatPanel.addEventListener("dragenter", (e) => {
  if (!e.dataTransfer?.types.includes("Files")) return;
  dragDepth += 1;
  $("drop-hint").hidden = false;
});
chatPanel.addEventListener("dragleave", () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) $("drop-hint").hidden = true;
});
chatPanel.addEventListener("dragover", (e) => e.preventDefault());
chatPanel.addEventListener("drop", (e) => {
  e.preventDefault();
  dragDepth = 0;
  $("drop-hint").hidden = true;
  const files = Array.from(e.dataTransfer?.files || []);
  attach(files.filter(isImage));
  upload(files.filter((f) => !isImage(f)));
});

async function attach(files) {
  if (!files.length) return;
  for (const reason of await attachments.add(files)) view.addNotice(reason, "error");
  composer.focus();
}

async function upload(files) {
  for (const file of files) {
    try {
      const path = await uploadToWorkspace(gateway, file);
      // built from nodes, not Markdown: a file name is text, whatever it holds
      view.addNotice(h("span", {}, `Uploaded ${file.name} to the workspace as `, h("code", {}, path), "."));
    } catch (err) {
      view.addNotice(`Not uploaded: ${err.message}`, "error");
    }
  }
}

header.showSession(conversation.key, null);
composer.focus();
gateway.start();
