"""Native `gsv__*` tools: tools that run inside the gateway (seed 000), by family."""
