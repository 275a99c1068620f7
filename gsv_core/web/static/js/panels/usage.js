// Usage: spend per day over the last two weeks as a bar chart (tokens where no price is
// known), a table of the same, and today's spend (since local midnight, every session).

import { h, svg, formatUsd } from "../dom.js";
import { Panel } from "./panel.js";

const DAYS = 14;
const DAY_MS = 86400000;
const HEIGHT = 180;
const MIN_WIDTH = 300;
const PAD = { top: 28, bottom: 28, left: 8, right: 8 };

export class UsagePanel extends Panel {
  constructor(section, gateway) {
    super(section, gateway, "Usage");
    this.spend = h("strong", { testid: "spend-today" }, "—");
    this.spendNote = h("span", { class: "muted small" });
    this.today = h("div", { class: "stat" }, h("span", { class: "muted" }, "Spent today"), this.spend, this.spendNote);
    this.chart = svg("svg", { class: "chart", testid: "usage-chart", role: "img", "aria-label": "Usage per day" });
    this.groups = [];
    // the chart is drawn at its real width, so its labels keep their size on a phone
    window.addEventListener("resize", () => this.visible && this.groups.length && this.drawChart(this.groups));
    this.table = h("div", { class: "table-wrap" });
    this.body.append(this.today, this.chart, this.table);
  }

  async load() {
    const midnight = new Date();
    midnight.setHours(0, 0, 0, 0);
    const since = midnight.getTime() - (DAYS - 1) * DAY_MS;
    const [days, today] = await Promise.all([
      this.gateway.call("usage.get", { since, groupBy: "day" }),
      this.gateway.call("usage.get", { since: midnight.getTime(), groupBy: "source" }),
    ]);
    const cost = (today.total || {}).costUsd;
    const known = typeof cost === "number";
    this.spend.textContent = known ? formatUsd(cost) : "—";
    this.spendNote.textContent = known ? "" : "no model used today has a known price";
    this.groups = fillDays(days.groups || [], since);
    this.drawChart(this.groups);
    this.drawTable(this.groups);
  }

  drawChart(groups) {
    const WIDTH = Math.max(MIN_WIDTH, Math.round(this.chart.getBoundingClientRect().width) || 640);
    this.chart.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
    const priced = groups.some((g) => typeof g.costUsd === "number" && g.costUsd > 0);
    const value = (g) => (priced ? g.costUsd || 0 : (g.input || 0) + (g.output || 0));
    const max = Math.max(...groups.map(value), priced ? 0.01 : 1);
    const slot = (WIDTH - PAD.left - PAD.right) / groups.length;
    const plot = HEIGHT - PAD.top - PAD.bottom;
    const bars = groups.map((g, n) => {
      const height = Math.max(value(g) ? 2 : 0, (value(g) / max) * plot);
      const x = PAD.left + n * slot + slot * 0.15;
      const label = `${g.name}: ${priced ? formatUsd(g.costUsd ?? 0) : `${value(g)} tokens`}, ${g.calls || 0} calls`;
      return svg("g", {},
        svg("rect", { class: "bar", x, y: PAD.top + plot - height, width: slot * 0.7, height, rx: 3 }, svg("title", {}, label)),
        n % 2 === groups.length % 2 ? null : svg("text", { class: "axis", x: x + slot * 0.35, y: HEIGHT - 8, "text-anchor": "middle" }, g.name.slice(5)));
    });
    const caption = svg("text", { class: "axis", x: PAD.left + 4, y: 16 },
      priced ? `max ${formatUsd(max)} / day` : `max ${max} tokens / day (no prices known)`);
    this.chart.replaceChildren(svg("line", { class: "baseline", x1: PAD.left, x2: WIDTH - PAD.right, y1: PAD.top + plot, y2: PAD.top + plot }), ...bars, caption);
  }

  drawTable(groups) {
    const rows = groups.filter((g) => g.calls).reverse().map((g) =>
      h("tr", {}, h("td", {}, g.name), h("td", {}, String(g.calls)), h("td", {}, String(g.input)), h("td", {}, String(g.output)),
        h("td", {}, g.costUsd === null ? "unpriced" : formatUsd(g.costUsd))));
    this.table.replaceChildren(rows.length
      ? h("table", {}, h("thead", {}, h("tr", {}, ["Day (UTC)", "Calls", "Input", "Output", "Cost"].map((t) => h("th", {}, t)))), h("tbody", {}, rows))
      : this.empty("No model calls in the last two weeks."));
  }
}

/** One group per UTC day from `since` to today, zeros where nothing was called. */
function fillDays(groups, since) {
  const byName = new Map(groups.map((g) => [g.name, g]));
  const out = [];
  for (let t = since; t <= Date.now() + DAY_MS; t += DAY_MS) {
    const name = new Date(t).toISOString().slice(0, 10);
    if (out.length && out[out.length - 1].name === name) continue;
    out.push(byName.get(name) || { name, calls: 0, input: 0, output: 0, costUsd: 0 });
  }
  while (out.length > DAYS && !out[out.length - 1].calls) out.pop();
  return out;
}
