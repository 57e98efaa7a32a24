"""Return codes and state slots of the compiled sequential loop (no numba import here).

:mod:`bayes_rvm.solvers._steps` compiles against these constants and
:mod:`bayes_rvm.solvers._compiled` reads the state arrays through them, so that
importing the solver does not load numba until a compiled fit runs.
"""

from __future__ import annotations

# Return codes of :func:`ascend` (the outer loop in Python maps them to an enum).
CONVERGED = 0
MAX_ITER = 1
ABOVE = 2
FULL = 3
NOT_PD = 4
NEWTON = 5  # a run of re-estimates on a large active set: joint Newton steps are due
LIMIT = 6  # the next step would take the ascent's gain beyond its limit

# Slots of the integer state ``istate``.
I_M = 0  # active columns
I_STEPS = 1  # steps and noise updates taken
I_SINCE = 2  # rank-one updates since the last factor
I_STALE = 3  # alpha moved since the last noise update
I_FRESH = 4  # S, Q exact (no rank-one update since the last refresh)
I_PROBE = 5  # the first noise update may answer ABOVE
I_PATH = 6  # entries of the path buffer written
I_SUB_STEPS = 7  # steps taken before the current alpha sub-problem
I_LSYNC = 8  # the factor L is that of the current H (kept through adds and re-estimates)
I_RUN = 9  # re-estimates in a row
I_FACTOR_PENDING = 10  # updates of L recorded but not yet applied (see _updates.sync_factor)
N_ISTATE = 11  # the size of istate
# Slots of the float state ``fstate``.
F_BETA = 0
F_LOG_EV = 1
F_INNER = 2  # tolerance of the current alpha sub-problem
F_RESOLUTION = 3  # relative accuracy of a gain at the conditioning of the last factor
