# optpipe.torch: run OptPipe schedules (offloads included) in PyTorch, profile a model into an
# OptPipe instance, and re-schedule while training (issue 19, parts 2-4). Pure Python on top of
# torch.distributed.pipelining; importing it never loads the compiled optpipe bindings (solver.py
# imports them lazily inside the functions that solve, or runs the optpipe CLI).
#
#   ScheduleOptPipe      the runtime: a PipelineScheduleMulti that runs an optpipe-schedule/1
#   load_schedule, PipelineSchedule, Action, ScheduleError, gpipe_schedule   schedules (schedule.py)
#   ActivationOffloader, OffloadStats     offload / reload of saved tensors (offload.py)
#   Profiler, profile    measure a running model into an optpipe-instance/1 (profiler.py)
#   OnlineRescheduler    profile, solve in the background, switch at an iteration boundary (online.py)
#   memory_report, format_memory_report   measured peak against the simulator's (memory.py)
#   solver               solve / heuristic_schedule / simulate / validate via the bindings or the CLI
from . import solver
from .memory import MemoryRow, format_memory_report, memory_report
from .offload import ActivationOffloader, OffloadError, OffloadStats
from .online import OnlineRescheduler, SwitchEvent
from .profiler import Profiler, profile
from .runtime import ActionTiming, ScheduleOptPipe
from .schedule import Action, PipelineSchedule, ScheduleError, gpipe_schedule, load_schedule, parse_action

__all__ = [
    "ScheduleOptPipe", "ActionTiming",
    "Action", "PipelineSchedule", "ScheduleError", "gpipe_schedule", "load_schedule", "parse_action",
    "ActivationOffloader", "OffloadError", "OffloadStats",
    "Profiler", "profile",
    "OnlineRescheduler", "SwitchEvent",
    "MemoryRow", "memory_report", "format_memory_report",
    "solver",
]
