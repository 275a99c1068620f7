// Files from the browser: text files uploaded into the agent's workspace
// (`workspace.write`, under uploads/), and images attached to the next message (sent as
// `chat.send` media). Binary or huge files are refused with a reason, before any upload.

import { h, formatSize } from "./dom.js";

export const MAX_TEXT_BYTES = 1024 * 1024;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024; // decoded, as the gateway checks
export const MAX_IMAGES = 4;
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const UPLOAD_DIR = "uploads";

export const isImage = (file) => IMAGE_TYPES.has(file.type);

/** Upload one text file to the workspace; resolves to the path written, rejects with a reason. */
export async function uploadToWorkspace(gateway, file) {
  if (file.size > MAX_TEXT_BYTES) {
    throw new Error(`${file.name} is ${formatSize(file.size)}; files up to ${formatSize(MAX_TEXT_BYTES)} can be uploaded`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let content;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${file.name} is not a text file (only UTF-8 text can go into the workspace)`);
  }
  if (content.includes("\u0000")) throw new Error(`${file.name} is not a text file (it holds NUL bytes)`);
  const path = `${UPLOAD_DIR}/${safeName(file.name)}`;
  const result = await gateway.call("workspace.write", { path, content });
  return result.path || path;
}

/** A file name that stays one name: no folders, no leading dots. */
function safeName(name) {
  const base = String(name).split(/[\\/]/).pop().replace(/[\u0000-\u001f]/g, "").replace(/^\.+/, "");
  return base || "upload.txt";
}

/** The images waiting to go with the next message, shown as removable chips. */
export class Attachments {
  constructor(container) {
    this.container = container;
    this.items = []; // {name, mime, data (base64), url (blob: for the preview), size}
    this.render();
  }

  get count() {
    return this.items.length;
  }

  /** Add image files; returns the reasons for the ones refused. */
  async add(files) {
    const refused = [];
    for (const file of files) {
      if (!isImage(file)) refused.push(`${file.name}: only PNG, JPEG, GIF and WebP images can be attached`);
      else if (file.size > MAX_IMAGE_BYTES) refused.push(`${file.name} is ${formatSize(file.size)}; images up to ${formatSize(MAX_IMAGE_BYTES)} can be attached`);
      else if (this.items.length >= MAX_IMAGES) refused.push(`${file.name}: at most ${MAX_IMAGES} images go with one message`);
      else this.items.push({ name: file.name, mime: file.type, size: file.size, data: await base64(file), url: URL.createObjectURL(file) });
    }
    this.render();
    return refused;
  }

  /** The images for chat.send (and their previews for the transcript); the chips go. */
  take() {
    const taken = this.items;
    this.items = [];
    this.render();
    return taken;
  }

  remove(item) {
    this.items = this.items.filter((other) => other !== item);
    URL.revokeObjectURL(item.url);
    this.render();
  }

  render() {
    this.container.replaceChildren(
      ...this.items.map((item) =>
        h("span", { class: "chip", title: `${item.name} · ${formatSize(item.size)}` },
          h("img", { src: item.url, alt: "" }),
          h("span", { class: "chip-name" }, item.name),
          h("button", { type: "button", class: "chip-remove", "aria-label": `Remove ${item.name}`, onclick: () => this.remove(item) }, "×"),
        ),
      ),
    );
    this.container.hidden = this.items.length === 0;
  }
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}
