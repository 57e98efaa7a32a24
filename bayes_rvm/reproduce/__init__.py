"""Reproduce the benchmark tables of Tipping (2001), Sec. 4.4 (protocols of App. E).

``python -m bayes_rvm reproduce [--rows ...] [--repeats N] [--first-repeat K] [--quick]
[--out DIR]``, or ``... reproduce --merge DIR [DIR ...] --out DIR``

Every row draws its training and test data as App. E describes, chooses the Gaussian
kernel width of the RVM, and the width, ``C`` (and ``epsilon``) of the scikit-learn SVM,
by 5-fold cross-validation on the training set, fits both on the whole training set and
records test error and number of vectors. The table shows our means beside the paper's
numbers and the paper's summary statistic, the *normalised mean*: for each row the RVM's
mean error (and vector count) divided by the SVM's, averaged over the rows.

Error units (the paper's columns)
---------------------------------
- Sinc rows: root-mean-square deviation from the noise-free sinc on 1000 equally spaced
  test inputs, multiplied by 10 (that is, in units of the noise level 0.1). The paper's
  column is not labelled; the factor is inferred from its numbers: the uniform-noise row
  has errors 0.57 times those of the Gaussian row, the ratio of the noise standard
  deviations (0.1 / sqrt(3) to 0.1), so the column is linear in the noise, an RMS and not
  an MSE (which would give a ratio of 1/3); and an RMS of 0.03 for a 7-vector fit to 100
  points with noise 0.1 is what our fits give, while 0.3 would be three times the noise.
- Friedman #1-#3: mean squared error against the noise-free function on 1000 test points.
- Boston: mean squared error on the 25 held-out (noisy) targets, in (1000 dollars)^2.
- Classification: test error in percent.

Training sets larger than ``Protocol.cv_train`` (USPS) are cross-validated on a random
subset of that size, and the chosen settings fitted on the whole set.

Preprocessing (not stated in the paper): inputs are standardised with the training set's
mean and standard deviation inside each fit (so a single kernel width suits inputs on
different scales, e.g. Friedman #2); the SVR's targets are standardised too, so that one
grid of ``C`` and ``epsilon`` fits every data set. The RVM is invariant to the target scale.
Ripley's row keeps the raw inputs and the paper's fixed width r = 0.5 (Sec. 4.2).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import bayes_rvm
from bayes_rvm._validation import lookup

# One module per concern: the rows and protocols (_rows), fitting the rows (_fitting), the
# outputs of a run and the merge of runs (_outputs), the result file shared with the
# benchmark scripts (_result_file); the command line is here.
from bayes_rvm.reproduce._fitting import RowResult, run_rows
from bayes_rvm.reproduce._outputs import markdown, merge_runs, write_outputs
from bayes_rvm.reproduce._result_file import machine, write_results
from bayes_rvm.reproduce._rows import (
    PAPER_NORMALISED_MEANS,
    PROTOCOLS,
    ROW_GROUPS,
    ROWS,
    Paper,
    Protocol,
    Row,
)

__all__ = [
    "PAPER_NORMALISED_MEANS",
    "PROTOCOLS",
    "ROWS",
    "Paper",
    "Protocol",
    "Row",
    "configure",
    "machine",
    "main",
    "merge_runs",
    "run",
    "run_rows",
    "write_results",
]

HELP = "run the benchmark tables of Tipping (2001) Sec. 4.4 and compare with the paper"

#: Repetitions per row with ``--quick`` (the full protocol uses each row's ``repeats``).
QUICK_REPEATS = 1

# ---------------------------------------------------------------- command line


def _row_keys(names: list[str]) -> list[str]:
    choices = {**ROW_GROUPS, **{key: (key,) for key in ROWS}}
    keys: list[str] = []
    for name in names:
        keys += lookup(choices, name, "row")
    return list(dict.fromkeys(keys))


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``reproduce`` options to a parser."""
    parser.add_argument(
        "--rows",
        nargs="+",
        default=["all"],
        metavar="ROW",
        help=f"rows or groups to run (default: all): {', '.join([*ROW_GROUPS, *ROWS])}",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="repetitions per row (default: the paper's)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"small grids, {QUICK_REPEATS} repetition{'' if QUICK_REPEATS == 1 else 's'}"
            " per row, USPS subsampled (a few minutes)"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
    parser.add_argument(
        "--first-repeat",
        type=int,
        default=0,
        help="number of the first repetition (default 0): run more repetitions later",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="merge the runs.csv of earlier runs into one table in --out (no fitting)",
    )
    parser.add_argument(
        "--usps-train",
        type=int,
        default=None,
        help="subsample the USPS training set to this many digits",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("reproduce-results"), help="output directory"
    )


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces a run (defaults spelled out)."""
    words = ["python -m bayes_rvm reproduce", "--rows", *args.rows]
    if args.quick:
        words.append("--quick")
    if args.repeats is not None:
        words += ["--repeats", str(args.repeats)]
    if args.usps_train is not None:
        words += ["--usps-train", str(args.usps_train)]
    if args.first_repeat:
        words += ["--first-repeat", str(args.first_repeat)]
    words += ["--seed", str(args.seed), "--out", str(args.out)]
    return " ".join(words)


def run(args: argparse.Namespace) -> int:
    """Run the ``reproduce`` command; returns the exit status."""
    if args.merge:
        results = merge_runs(args.merge)
        seconds = sum(r.seconds for r in results)
        sources = [
            (Path(d) / "table.md").read_text().splitlines()[0]
            if (Path(d) / "table.md").exists()
            else f"`{d}`"
            for d in args.merge
        ]
        header = (
            f"Merged ({sum(len(r.runs) for r in results)} repetitions, fit time {seconds:.0f} "
            "s, the sum over the runs' SVM and RVM searches) from:\n\n"
            + "".join(f"- {line}\n" for line in sources)
        )
        command = " ".join(
            [
                "python -m bayes_rvm reproduce --merge",
                *map(str, args.merge),
                "--out",
                str(args.out),
            ]
        )
        write_outputs(results, args.out, header, command)
        print(markdown(results, header))
        return 0
    if args.first_repeat < 0:
        raise ValueError(f"--first-repeat must be >= 0, got {args.first_repeat}")
    keys = _row_keys(args.rows)
    protocol = PROTOCOLS["quick" if args.quick else "full"]
    if args.usps_train is not None:
        protocol = replace(protocol, usps_train=args.usps_train)
    repeats = args.repeats
    if repeats is None and args.quick:
        repeats = QUICK_REPEATS
    if repeats is not None and repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")
    start = time.perf_counter()

    def header(done: list[RowResult]) -> str:
        status = (
            "complete" if len(done) == len(keys) else f"partial, {len(done)} of {len(keys)} rows"
        )
        return (
            f"`{_command(args)}` ({status}): protocol "
            f"{protocol.name!r}, seed {args.seed}, repetitions "
            f"{'per row as in the paper' if repeats is None else repeats}, run time "
            f"{time.perf_counter() - start:.0f} s, bayes_rvm {bayes_rvm.__version__}.\n"
        )

    def save(done: list[RowResult]) -> None:
        write_outputs(done, args.out, header(done), _command(args))

    results = run_rows(
        keys,
        protocol=protocol,
        repeats=repeats,
        seed=args.seed,
        first_repeat=args.first_repeat,
        on_row_done=save,
    )
    print(markdown(results, header(results)))
    print(f"wrote table.md, table.csv, runs.csv and results.json in {args.out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``bayes-rvm reproduce`` with the arguments ``argv`` (default: the command line's)."""
    from bayes_rvm.__main__ import main as command_line

    return command_line(["reproduce", *(sys.argv[1:] if argv is None else argv)])
