// Nodes: every node seen, online or not, with its platform and the tools it offers.

import { h, relativeTime, fullTime } from "../dom.js";
import { Panel } from "./panel.js";

export class NodesPanel extends Panel {
  constructor(section, gateway) {
    super(section, gateway, "Nodes");
  }

  async load() {
    const listed = await this.gateway.call("nodes.list");
    const nodes = listed.nodes || [];
    this.body.replaceChildren(...(nodes.length ? nodes.map(item) : [this.empty("No node has connected yet. Start one with ", h("code", {}, "gsv node run"), ".")]));
  }
}

function item(node) {
  const seen = node.online ? node.lastConnectedAt : node.lastSeenAt ?? node.lastDisconnectedAt;
  const where = [node.platform, node.hostOs, node.version && `v${node.version}`].filter(Boolean).join(" · ");
  return h(
    "div", { class: "item", testid: "node-item", dataset: { nodeId: node.nodeId, online: String(Boolean(node.online)) } },
    h("div", { class: "item-main" },
      h("div", { class: "item-title" },
        h("span", { class: `dot ${node.online ? "on" : "off"}`, "aria-hidden": "true" }),
        h("strong", {}, node.nodeId),
        h("span", { class: "tag" }, node.online ? "online" : "offline")),
      h("div", { class: "muted small" }, where,
        seen ? h("span", { title: fullTime(seen) }, ` · ${node.online ? "connected" : "seen"} ${relativeTime(seen)}`) : null),
      h("div", { class: "chips" }, (node.tools || []).map((tool) => h("code", { class: "chip-tool" }, String(tool))))),
  );
}
