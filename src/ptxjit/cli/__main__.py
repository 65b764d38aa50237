"""`python -m ptxjit.cli`: the `ptxjit` command."""

from ptxjit.cli.app import main

main()
