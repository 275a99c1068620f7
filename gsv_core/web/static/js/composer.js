// The composer: the message box and its keys (Enter sends, Shift+Enter is a new line,
// Esc stops the run, Up in an empty box brings back your last message), the slash-command
// menu (arrows move, Tab or Enter picks), and the Send and Stop buttons.

import { h } from "./dom.js";
import { completions } from "./commands.js";

const MAX_ROWS_PX = 240;

export class Composer {
  constructor({ form, textarea, send, stop, menu, activity }, { onSubmit, onStop }) {
    Object.assign(this, { form, textarea, send, stop, menu, activity, onSubmit, onStop });
    this.lastSent = "";
    this.choices = [];
    this.selected = 0;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });
    stop.addEventListener("click", () => this.onStop());
    textarea.addEventListener("input", () => this.changed());
    textarea.addEventListener("keydown", (e) => this.keydown(e));
    // a click on a menu item blurs the box first: close only if the focus stayed away
    textarea.addEventListener("blur", () =>
      setTimeout(() => document.activeElement !== textarea && this.closeMenu(), 150));
  }

  get text() {
    return this.textarea.value;
  }

  set text(value) {
    this.textarea.value = value;
    this.changed();
  }

  focus() {
    this.textarea.focus();
  }

  /** Stop is shown, and usable, only while a run of this session is on. */
  setBusy(busy) {
    this.stop.hidden = !busy;
    this.stop.disabled = !busy;
    if (this.activity) this.activity.hidden = !busy;
  }

  submit() {
    const text = this.text;
    if (!text.trim() && !this.canSendEmpty?.()) return;
    this.lastSent = text;
    this.text = "";
    this.closeMenu();
    this.onSubmit(text);
  }

  changed() {
    const area = this.textarea;
    area.style.height = "auto";
    area.style.height = `${Math.min(area.scrollHeight, MAX_ROWS_PX)}px`;
    this.showMenu(completions(area.value));
  }

  keydown(e) {
    if (e.isComposing) return; // an IME is composing: Enter is its own
    if (this.menuOpen && this.menuKey(e)) return;
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      this.submit();
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.onStop();
    } else if (e.key === "ArrowUp" && !this.text && this.lastSent) {
      e.preventDefault();
      this.text = this.lastSent;
    }
  }

  /** Keys of the open slash menu; true when the key was the menu's. */
  menuKey(e) {
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (e.key in moves) {
      this.selected = (this.selected + moves[e.key] + this.choices.length) % this.choices.length;
      this.highlight();
    } else if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
      const exact = this.choices.length === 1 && `/${this.choices[0].spelling}` === this.text.trim();
      if (e.key === "Enter" && exact) return false; // typed in full: Enter sends it
      this.pick(this.choices[this.selected]);
    } else if (e.key === "Escape") {
      this.closeMenu();
    } else return false;
    e.preventDefault();
    return true;
  }

  get menuOpen() {
    return !this.menu.hidden && this.choices.length > 0;
  }

  showMenu(choices) {
    this.choices = choices;
    this.selected = 0;
    if (!choices.length) return this.closeMenu();
    const items = choices.map(({ spelling, command }, n) =>
      h("li", {
        class: "slash-item", testid: "slash-item", role: "option", id: `slash-${n}`,
        dataset: { command: `/${spelling}` },
        onmousedown: (e) => e.preventDefault(), // keep the focus in the composer
        onclick: () => this.pick(choices[n]),
      },
      h("span", { class: "slash-name" }, `/${spelling}`),
      command.usage ? h("span", { class: "slash-usage" }, ` ${command.usage}`) : null,
      h("span", { class: "slash-help" }, command.help)),
    );
    this.menu.replaceChildren(...items);
    this.menu.hidden = false;
    this.textarea.setAttribute("aria-expanded", "true");
    this.highlight();
  }

  highlight() {
    this.menu.querySelectorAll(".slash-item").forEach((item, n) => {
      item.setAttribute("aria-selected", String(n === this.selected));
      if (n === this.selected) keepInView(this.menu, item);
    });
    this.textarea.setAttribute("aria-activedescendant", `slash-${this.selected}`);
  }

  pick(choice) {
    if (!choice) return;
    this.text = `/${choice.spelling}${choice.command.usage ? " " : ""}`;
    this.closeMenu();
    this.focus();
  }

  closeMenu() {
    this.menu.hidden = true;
    this.choices = [];
    this.textarea.setAttribute("aria-expanded", "false");
    this.textarea.removeAttribute("aria-activedescendant");
  }
}

/** Scroll `box` just enough to show `item` (scrollIntoView would scroll the page too). */
function keepInView(box, item) {
  if (item.offsetTop < box.scrollTop) box.scrollTop = item.offsetTop;
  else if (item.offsetTop + item.offsetHeight > box.scrollTop + box.clientHeight) {
    box.scrollTop = item.offsetTop + item.offsetHeight - box.clientHeight;
  }
}
