// The slash commands the composer completes: the gateway's (sent as they are; the same
// list as gsv_core/protocol/commands.py, which tests/web/test_assets.py keeps in step)
// and the few the page answers itself (`local`).

export const GATEWAY_COMMANDS = [
  { name: "reset", aliases: ["new"], usage: "", help: "Start a new session (the old one is archived)" },
  { name: "compact", aliases: [], usage: "[N]", help: "Keep the last N messages (default 20)" },
  { name: "stop", aliases: [], usage: "", help: "Stop the current run" },
  { name: "status", aliases: [], usage: "", help: "Show session info" },
  { name: "usage", aliases: [], usage: "", help: "Show today's tokens and spend (this session and all)" },
  { name: "budget", aliases: [], usage: "[daily|monthly|background USD|off]", help: "Show or set a budget" },
  { name: "model", aliases: [], usage: "[provider/model-id|model-id]", help: "Show or set the model" },
  { name: "think", aliases: ["thinking", "t"], usage: "[level]", help: "Show or set the reasoning level (off, minimal, low, medium, high, xhigh)" },
  { name: "help", aliases: [], usage: "", help: "Show this help" },
];

export const LOCAL_COMMANDS = [
  { name: "sessions", aliases: [], usage: "", help: "Show the sessions list", local: true },
  { name: "switch", aliases: [], usage: "KEY", help: "Switch to the session KEY", local: true },
  { name: "rename", aliases: [], usage: "LABEL", help: "Label this session", local: true },
  { name: "search", aliases: [], usage: "QUERY", help: "Search past conversations and notes; click a hit to open its session", local: true },
];

export const COMMANDS = [...GATEWAY_COMMANDS, ...LOCAL_COMMANDS];

// the gateway answers these by changing the session: the page loads it again afterwards
export const RELOADING = new Set(["reset", "compact"]);
// ... or its settings: the header's model is read again
export const SETTINGS_CHANGING = new Set(["model", "think"]);

/** Commands whose name or alias starts with what is typed (`/th` -> think), as
 * [{spelling, command}]; nothing once the text is more than one `/word`. */
export function completions(text) {
  if (!text.startsWith("/") || /\s/.test(text)) return [];
  const prefix = text.slice(1).toLowerCase();
  const found = [];
  for (const command of COMMANDS) {
    const spelling = [command.name, ...command.aliases].find((s) => s.startsWith(prefix));
    if (spelling !== undefined) found.push({ spelling, command });
  }
  return found;
}

/** A command the page answers itself (`/switch KEY`) as {name, args}, or null. */
export function parseLocal(text) {
  const stripped = text.trim();
  if (!stripped.startsWith("/") || stripped.includes("\n")) return null;
  const [word, ...rest] = stripped.slice(1).split(" ");
  const command = LOCAL_COMMANDS.find((c) => [c.name, ...c.aliases].includes(word.toLowerCase()));
  return command ? { name: command.name, args: rest.join(" ").trim() } : null;
}

/** A one-line `/word ...` message: the gateway may answer it as a command. */
export function isCommandLike(text) {
  const stripped = text.trim();
  return stripped.startsWith("/") && !stripped.includes("\n");
}
