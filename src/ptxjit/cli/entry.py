"""The `ptxjit` command's entry point.  `ptxjit exec` starts the program without loading the rest of the
command line (NumPy, rich, the trace and check commands): it only sets up the environment and execs."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        from ptxjit.cli.driver import exec_command

        exec_command.main(sys.argv[2:], prog_name="ptxjit exec")
        return
    from ptxjit.cli.app import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
