// Config: the gateway's config as JSON, with every secret masked. config.get already
// reads secrets as `***`; anything whose name looks secret is masked here as well, by
// the rule of gsv_core/secret_names.py.

import { h } from "../dom.js";
import { Panel } from "./panel.js";

const SECRET_NAME = /(token|password|passwd|api[_-]?key)$|secret/i;
const MASK = "***";

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
    this.view.textContent = JSON.stringify(mask(got.config ?? {}), null, 2);
  }
}

/** A copy of `value` with every secret-looking key's value replaced by *** (all of it,
 * when that value is an object: its inner names need not look secret). */
export function mask(value, masking = false) {
  if (Array.isArray(value)) return value.map((inner) => mask(inner, masking));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, mask(inner, masking || SECRET_NAME.test(key))]),
    );
  }
  const secretLeaf = masking && value !== null && value !== "" && typeof value !== "boolean";
  return secretLeaf ? MASK : value;
}
