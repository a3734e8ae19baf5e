"""OptPipe: pipeline-parallel training schedules that fit in memory.

The C++ core (the simulator, the validator, the baseline heuristics, the exact solver, the
instance generator and the Gantt charts) as a Python package; everything here comes from the
extension module ``optpipe._optpipe``. A short tour::

    import optpipe
    inst = optpipe.Instance.from_file("instances/gpt-8x24-tight.json")
    # or optpipe.generate("gpt3-1.5b", devices=8, microbatches=24, memory_limit="3act")
    sched = optpipe.schedule(inst)                   # the best baseline heuristic
    result = optpipe.solve(inst, time_limit=10)      # exact solver: schedule, status, bound, gap
    sim = optpipe.simulate(inst, result.schedule)    # makespan, bubble, peaks, timeline
    assert not optpipe.validate(inst, result.schedule)
    svg = optpipe.render_svg(inst, result.schedule)

Errors in files and arguments raise ``optpipe.InputError`` (a ``ValueError``) whose message names
the field path and the reason. Subpackages that need more (``optpipe.torch``) import it only
when they are imported themselves.
"""

from optpipe._optpipe import (
    ChannelLoad,
    InfeasibleError,
    InputError,
    Instance,
    Schedule,
    SimResult,
    SolveProgress,
    SolveResult,
    Transfer,
    Violation,
    __version__,
    build,
    generate,
    heuristics,
    render_svg,
    schedule,
    simulate,
    solve,
    validate,
)

__all__ = [
    "ChannelLoad",
    "InfeasibleError",
    "InputError",
    "Instance",
    "Schedule",
    "SimResult",
    "SolveProgress",
    "SolveResult",
    "Transfer",
    "Violation",
    "__version__",
    "build",
    "generate",
    "heuristics",
    "render_svg",
    "schedule",
    "simulate",
    "solve",
    "validate",
]
