// The views (Chat, Sessions, Nodes, ...): one tab button and one panel each; the panel of
// the chosen tab is shown and told to refresh. On a narrow screen the tab list sits
// behind the menu button.

export class Tabs {
  constructor({ nav, menuButton, panels }) {
    this.nav = nav;
    this.menuButton = menuButton;
    this.panels = panels; // name -> object with optional show()
    this.current = "chat";
    this.buttons = Array.from(nav.querySelectorAll('[role="tab"]'));
    for (const button of this.buttons) button.addEventListener("click", () => this.select(button.dataset.panel));
    nav.addEventListener("keydown", (e) => this.arrowKeys(e));
    menuButton.addEventListener("click", () => this.toggleMenu());
  }

  select(name) {
    this.current = name;
    for (const button of this.buttons) {
      const chosen = button.dataset.panel === name;
      button.setAttribute("aria-selected", String(chosen));
      button.tabIndex = chosen ? 0 : -1;
      document.getElementById(`panel-${button.dataset.panel}`).hidden = !chosen;
    }
    this.toggleMenu(false);
    this.panels[name]?.show?.();
  }

  toggleMenu(open = !this.nav.classList.contains("open")) {
    this.nav.classList.toggle("open", open);
    this.menuButton.setAttribute("aria-expanded", String(open));
  }

  arrowKeys(e) {
    const moves = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };
    if (!(e.key in moves)) return;
    e.preventDefault();
    const at = this.buttons.findIndex((b) => b.dataset.panel === this.current);
    const next = this.buttons[(at + moves[e.key] + this.buttons.length) % this.buttons.length];
    this.select(next.dataset.panel);
    next.focus();
  }
}
