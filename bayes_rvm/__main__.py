"""Command line: ``bayes-rvm <command> [options]`` (also ``python -m bayes_rvm``)."""

from __future__ import annotations

import argparse
import os
import sys

import bayes_rvm
from bayes_rvm import demo, reproduce

#: command name -> module with ``HELP``, ``configure(parser)`` and ``run(args) -> int``
COMMANDS = {"demo": demo, "reproduce": reproduce}


def invoked_as() -> str:
    """The command as the user typed it: ``python -m bayes_rvm`` or the script's name."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if name in ("", "-c", "__main__.py") or name.endswith(".py"):
        return "python -m bayes_rvm"
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=invoked_as(),
        description="Sparse Bayesian learning and the Relevance Vector Machine.",
    )
    parser.add_argument(
        "--version", action="version", version=f"bayes_rvm {bayes_rvm.__version__}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, module in COMMANDS.items():
        module.configure(commands.add_parser(name, help=module.HELP, description=module.HELP))
    args = parser.parse_args(argv)
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
