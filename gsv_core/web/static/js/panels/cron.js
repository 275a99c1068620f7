// Cron jobs: each job's schedule, its next run and how its last run went; run one now.

import { h, relativeTime, fullTime } from "../dom.js";
import { Panel } from "./panel.js";

export class CronPanel extends Panel {
  constructor(section, gateway) {
    super(section, gateway, "Cron jobs");
  }

  async load() {
    const listed = await this.gateway.call("cron.list", { includeDisabled: true });
    const jobs = listed.jobs || [];
    this.body.replaceChildren(...(jobs.length ? jobs.map((job) => this.item(job)) : [this.empty("No cron jobs. Add one with ", h("code", {}, "gsv cron add"), ".")]));
  }

  item(job) {
    const state = job.state || {};
    const last = state.lastStatus
      ? h("span", { class: `tag ${state.lastStatus === "ok" ? "ok" : "bad"}`, title: fullTime(state.lastRunAtMs) },
        `last: ${state.lastStatus} ${relativeTime(state.lastRunAtMs)}`)
      : h("span", { class: "tag" }, "never ran");
    return h(
      "div", { class: "item", testid: "cron-item", dataset: { jobId: job.id } },
      h("div", { class: "item-main" },
        h("div", { class: "item-title" }, h("strong", {}, job.name), job.enabled ? null : h("span", { class: "tag" }, "disabled")),
        h("div", { class: "muted small" }, describeSchedule(job.schedule), " · ", describeSpec(job.spec)),
        h("div", { class: "small" },
          h("span", { title: fullTime(state.nextRunAtMs) }, state.nextRunAtMs ? `next ${relativeTime(state.nextRunAtMs)}` : "no next run"),
          " ", last),
        state.lastError ? h("div", { class: "small error-text" }, state.lastError) : null),
      h("div", { class: "item-actions" },
        h("button", { type: "button", class: "button", onclick: () => this.runNow(job) }, "Run now")),
    );
  }

  async runNow(job) {
    this.say(`Running ${job.name}…`);
    if (await this.act(`Cannot run ${job.name}`, () => this.gateway.call("cron.run", { id: job.id, mode: "force" }, { timeout: 600000 }))) {
      await this.refresh();
      this.say(`${job.name} ran.`);
    }
  }
}

function describeSchedule(schedule = {}) {
  if (schedule.kind === "at") return `once at ${fullTime(schedule.atMs)}`;
  if (schedule.kind === "every") return `every ${Math.round(schedule.everyMs / 60000)} min`;
  if (schedule.kind === "cron") return `cron ${schedule.expr}${schedule.tz ? ` (${schedule.tz})` : ""}`;
  return "?";
}

function describeSpec(spec = {}) {
  const text = spec.mode === "task" ? spec.message : spec.text;
  const line = String(text ?? "").split("\n")[0];
  return `${spec.mode === "task" ? "task" : "main session"}: ${line.length > 80 ? `${line.slice(0, 79)}…` : line}`;
}
