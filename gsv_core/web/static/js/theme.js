// Dark and light themes: the system's preference until you pick one with the toggle,
// then your choice, remembered in localStorage. The theme is `data-theme` on <html>.

const KEY = "gsv.theme";

export function initTheme(toggle) {
  const system = matchMedia("(prefers-color-scheme: dark)");
  const apply = () => {
    const theme = localStorage.getItem(KEY) || (system.matches ? "dark" : "light");
    document.documentElement.dataset.theme = theme;
    toggle.setAttribute("aria-pressed", String(theme === "dark"));
    toggle.title = theme === "dark" ? "Switch to the light theme" : "Switch to the dark theme";
  };
  system.addEventListener("change", apply);
  toggle.addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    localStorage.setItem(KEY, next);
    apply();
  });
  apply();
}
