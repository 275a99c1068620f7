"""The `gsv` command line: typer commands, rich output and the Textual TUI over gsv_core."""
