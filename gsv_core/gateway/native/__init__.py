"""Native `gsv__*` tools: tools that run inside the gateway (docs/tools.md), by family."""
