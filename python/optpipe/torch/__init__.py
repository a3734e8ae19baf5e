# optpipe.torch: run OptPipe schedules (offloads included) in PyTorch (issue 19). Pure Python on
# top of torch.distributed.pipelining; importing it never loads the compiled optpipe bindings.
#
#   ScheduleOptPipe      the runtime: a PipelineScheduleMulti that runs an optpipe-schedule/1
#   load_schedule, PipelineSchedule, Action, ScheduleError, gpipe_schedule   schedules (schedule.py)
#   ActivationOffloader, OffloadStats     offload / reload of saved tensors (offload.py)
from .offload import ActivationOffloader, OffloadError, OffloadStats
from .runtime import ActionTiming, ScheduleOptPipe
from .schedule import Action, PipelineSchedule, ScheduleError, gpipe_schedule, load_schedule, parse_action

__all__ = [
    "ScheduleOptPipe", "ActionTiming",
    "Action", "PipelineSchedule", "ScheduleError", "gpipe_schedule", "load_schedule", "parse_action",
    "ActivationOffloader", "OffloadError", "OffloadStats",
]
