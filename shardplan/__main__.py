"""`python -m shardplan ...` runs the CLI."""
from shardplan.cli import main

main()
