"""`python -m gsv_cli` runs the `gsv` command (used to start background processes)."""

from gsv_cli.main import main

main()
