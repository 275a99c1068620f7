"""The agent: session actors, the run loop, prompt assembly, commands and directives."""
