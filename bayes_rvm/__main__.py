"""Command line: ``python -m bayes_rvm <command> [options]`` (also ``bayes-rvm``)."""

from __future__ import annotations

import argparse
import sys

from bayes_rvm import demo, reproduce

#: command name -> module with ``HELP``, ``configure(parser)`` and ``run(args) -> int``
COMMANDS = {"demo": demo, "reproduce": reproduce}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bayes_rvm")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, module in COMMANDS.items():
        module.configure(commands.add_parser(name, help=module.HELP, description=module.HELP))
    args = parser.parse_args(argv)
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
