"""Reads an OptPipe instance file (../shared/spec/problem.md §5, format optpipe-instance/1) for
the solver benchmark's own models. The C++ reader (model/instance_io.cc) is the reference and
validates the files; this one only fills the defaults the models need."""

import json
import re
from dataclasses import dataclass, field
from typing import List, Optional

_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4,
          "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}


def parse_bytes(v, where: str) -> float:
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", str(v))
    if not m or m.group(2) not in _UNITS:
        raise ValueError(f"{where}: cannot read '{v}' as bytes")
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass
class Stage:
    device: int
    forward: float
    backward: float
    weight: float
    activation: float
    weight_activation: float
    offload: Optional[float]
    reload: Optional[float]


@dataclass
class Device:
    memory_limit: float
    static_memory: float
    pcie_group: int


@dataclass
class Instance:
    name: str
    microbatches: int
    split_backward: bool
    offload_levels: List[float]
    comm: List[float]  # between stage s and s+1 (0 when on the same device)
    devices: List[Device] = field(default_factory=list)
    stages: List[Stage] = field(default_factory=list)

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    def types(self) -> List[str]:
        return ["F", "B", "W"] if self.split_backward else ["F", "B"]

    def duration(self, t: str, s: int) -> float:
        st = self.stages[s]
        if t == "F":
            return st.forward
        if t == "B":
            return st.backward if self.split_backward else st.backward + st.weight
        return st.weight

    def can_offload(self, s: int) -> bool:
        st = self.stages[s]
        return st.offload is not None and any(r > 0 for r in self.offload_levels)


def load(path: str) -> Instance:
    with open(path) as f:
        doc = json.load(f)
    split = doc.get("split_backward", True)
    S = len(doc["stages"])
    devices = []
    for d, dv in enumerate(doc["devices"]):
        devices.append(Device(parse_bytes(dv["memory_limit"], f"devices[{d}].memory_limit"),
                              parse_bytes(dv.get("static_memory", 0), f"devices[{d}].static_memory"),
                              int(dv.get("pcie_group", d))))
    stages = []
    for s, sv in enumerate(doc["stages"]):
        stages.append(Stage(int(sv["device"]), float(sv["forward"]), float(sv["backward"]),
                            float(sv.get("weight", 0.0)),
                            parse_bytes(sv["activation"], f"stages[{s}].activation"),
                            parse_bytes(sv.get("weight_activation", 0), f"stages[{s}].weight_activation")
                            if split else 0.0,
                            sv.get("offload"), sv.get("reload")))
    comm_v = doc.get("comm", 0.0)
    comm = list(comm_v) if isinstance(comm_v, list) else [float(comm_v)] * max(0, S - 1)
    comm = [c if stages[s].device != stages[s + 1].device else 0.0 for s, c in enumerate(comm)]
    return Instance(doc.get("name", ""), int(doc["microbatches"]), split,
                    sorted(float(r) for r in doc.get("offload_levels", [0, 1])), comm, devices, stages)
