"""The Textual chat TUI (`gsv chat`); built by `make_app(client)`."""
