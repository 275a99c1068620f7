// The blocks of the transcript: the agent's replies (Markdown re-rendered once per frame
// while they stream, their thinking folded above them), your messages (with their images
// and their queued / not-sent state) and notices (command answers, errors).

import { h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

/** One reply of the agent: its folded thinking and its Markdown, re-rendered once per frame. */
export class Reply {
  constructor(text = "", thinking = "") {
    this.text = text;
    this.md = h("div", { class: "md" });
    this.el = h("div", { class: "message assistant", testid: "message", dataset: { role: "assistant" } }, this.md);
    this.thinking = null;
    this.frame = 0;
    if (thinking) this.setThinking(thinking);
    this.render();
  }

  /** More text; with `replace` the reply starts over with it (a cut stream answered again). */
  write(delta, afterRender, replace = false) {
    this.text = replace ? delta : this.text + delta;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
      afterRender();
    });
  }

  /** The run's text is final: show `text` when the deltas missed some of it. */
  settle(text) {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (text && text.trim() !== this.text.trim()) this.text = text;
    this.render();
    this.el.classList.remove("streaming");
    this.el.removeAttribute("aria-busy");
  }

  render() {
    this.md.replaceChildren(renderMarkdown(this.text));
    this.md.hidden = !this.text.trim();
  }

  setThinking(text) {
    if (!text.trim()) return;
    if (!this.thinking) {
      this.thinkingBody = h("div", { class: "md" });
      this.thinking = h("details", { class: "thinking", testid: "thinking" }, h("summary", {}, "Thinking"), this.thinkingBody);
      this.el.prepend(this.thinking);
    }
    this.thinkingBody.replaceChildren(renderMarkdown(text));
  }
}

/** A message you sent: shows `queued` until its run starts, and why it failed to send. */
export class UserMessage {
  constructor(text, images = []) {
    this.state = h("div", { class: "message-state", hidden: true });
    const pictures = images.map((image) =>
      image.url
        ? h("img", { class: "thumb", src: image.url, alt: image.name || "attached image" })
        : h("span", { class: "image-placeholder" }, `[image · ${image.mime || image}]`),
    );
    this.el = h(
      "div", { class: "message user", testid: "message", dataset: { role: "user" } },
      h("div", { class: "md plain" }, text),
      pictures.length ? h("div", { class: "message-images" }, pictures) : null,
      this.state,
    );
    this.text = text;
    this.position = null;
  }

  markQueued(position) {
    this.position = position;
    this.el.classList.add("queued");
    this.show(`queued (position ${position}): it runs when the current run ends`);
  }

  markStarted() {
    this.position = null;
    this.el.classList.remove("queued");
    this.show("");
  }

  markFailed(reason) {
    this.el.classList.remove("queued");
    this.el.classList.add("failed");
    this.show(`✗ not sent: ${reason}`);
  }

  show(text) {
    this.state.textContent = text;
    this.state.hidden = !text;
  }
}

/** A line from the page or the gateway: `level` system | error; Markdown when asked. */
export function noticeElement(text, level = "system", markdown = false) {
  return h(
    "div", { class: `message notice ${level}`, testid: "message", dataset: { role: level } },
    h("div", { class: markdown ? "md" : "md plain" }, markdown ? renderMarkdown(text) : text),
  );
}
