"""`python -m shardplan ...` runs the CLI."""
from shardplan.cli.main import main

main()
