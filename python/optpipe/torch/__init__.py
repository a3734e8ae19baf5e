# optpipe.torch: run OptPipe schedules (offloads included) in PyTorch (issue 19). Pure Python on
# top of torch.distributed.pipelining; importing it never loads the compiled optpipe bindings.
#
#   load_schedule, PipelineSchedule, Action, ScheduleError, gpipe_schedule   schedules (schedule.py)
#   ActivationOffloader, OffloadStats     offload / reload of saved tensors (offload.py)
from .offload import ActivationOffloader, OffloadError, OffloadStats
from .schedule import Action, PipelineSchedule, ScheduleError, gpipe_schedule, load_schedule, parse_action

__all__ = [
    "Action", "PipelineSchedule", "ScheduleError", "gpipe_schedule", "load_schedule", "parse_action",
    "ActivationOffloader", "OffloadError", "OffloadStats",
]
