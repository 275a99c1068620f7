// Config: the gateway's config as JSON. config.get masks every secret as `***` itself
// (gsv_core/config_mask.py mask_secrets): the page shows what it gets and knows no rule of its own.

import { h } from "../dom.js";
import { Panel } from "./panel.js";

export class ConfigPanel extends Panel {
  constructor(section, gateway) {
    super(section, gateway, "Config");
    this.view = h("pre", { class: "config-view", testid: "config-view" });
    const hint = h("p", { class: "muted small" },
      "Change settings with ", h("code", {}, "gsv config set PATH VALUE"), ". Secrets are never shown.");
    this.body.append(hint, this.view);
  }

  async load() {
    const got = await this.gateway.call("config.get", {});
    this.view.textContent = JSON.stringify(got.config ?? {}, null, 2);
  }
}
