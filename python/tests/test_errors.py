"""Bad input raises optpipe.InputError (a ValueError) with the C++ message: the file, the field
path and the reason, as the command prints them."""

import json

import pytest

import optpipe
from conftest import instance_path, run_cli


def error_of(fn):
    with pytest.raises(optpipe.InputError) as err:
        fn()
    return str(err.value)


def test_input_error_is_a_value_error():
    assert issubclass(optpipe.InputError, ValueError)
    assert issubclass(optpipe.InfeasibleError, RuntimeError)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["stages"][1].__setitem__("forward", -1), "stages[1].forward: must be >= 0, got -1"),
        (lambda d: d["stages"][0].pop("backward"), "stages[0].backward: missing required field"),
        (lambda d: d.__setitem__("format", "optpipe-instance/2"), "format: must be \"optpipe-instance/1\""),
        (lambda d: d.__setitem__("colour", "blue"), "colour: unknown field (allowed here: format, name, "),
        (lambda d: d["devices"][1].__setitem__("memory_limit", "14 parsecs"),
         "devices[1].memory_limit: \"14 parsecs\" is not a byte size"),
        (lambda d: d.__setitem__("microbatches", 0), "microbatches: must be an integer from 1 to 1000000, got 0"),
        (lambda d: d["stages"][0].__setitem__("device", 5), "stages[0].device: device 5 does not exist"),
    ],
)
def test_bad_instance_fields_name_their_path(tiny, edit, message):
    doc = tiny.to_dict()
    edit(doc)
    assert error_of(lambda: optpipe.Instance.from_dict(doc)).startswith(message)
    assert error_of(lambda: optpipe.Instance.from_json(json.dumps(doc))).startswith(message)


def test_the_message_is_the_commands(cli, tmp_path, tiny):
    doc = tiny.to_dict()
    doc["stages"][1]["forward"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    message = error_of(lambda: optpipe.Instance.from_file(path))
    assert message.startswith(f"{path}: stages[1].forward: ")
    out = run_cli(cli, "validate", path, check=False)
    assert out.returncode == 2
    assert message in out.stderr + out.stdout


def test_values_that_are_not_json_name_their_path(tiny):
    doc = tiny.to_dict()
    doc["stages"][1]["forward"] = object()
    assert error_of(lambda: optpipe.Instance.from_dict(doc)).startswith(
        "stages[1].forward: a object is not a JSON value")
    doc = tiny.to_dict()
    doc["devices"][0][3] = "x"
    assert error_of(lambda: optpipe.Instance.from_dict(doc)).startswith("devices[0]: keys must be str, got int 3")
    doc = tiny.to_dict()
    doc["microbatches"] = 10**30
    assert "too large" in error_of(lambda: optpipe.Instance.from_dict(doc))
    assert error_of(lambda: optpipe.Instance.from_dict([1, 2])).startswith(
        "instance: expected a dict (an optpipe-instance/1 document), got a list")


def test_unreadable_and_malformed_files(tmp_path):
    missing = tmp_path / "nope.json"
    assert str(missing) in error_of(lambda: optpipe.Instance.from_file(missing))
    broken = tmp_path / "broken.json"
    broken.write_text("{\"format\": ")
    assert error_of(lambda: optpipe.Instance.from_file(broken)).startswith(str(broken) + ": ")
    assert error_of(lambda: optpipe.Schedule.from_file(broken)).startswith(str(broken) + ": ")


def test_bad_schedules_name_their_place():
    assert error_of(lambda: optpipe.Schedule([["F0.0", "X0.1"]])).startswith("devices[0][1]: \"X0.1\" is not an action")
    assert error_of(lambda: optpipe.Schedule([["F0.0"], ["F1.0", 7]])).startswith("devices[1][1]: ")
    assert error_of(lambda: optpipe.Schedule("F0.0")).startswith("devices: ")
    doc = {"format": "optpipe-schedule/1", "instance": "x", "devices": [["F0.0"]], "status": "great"}
    assert error_of(lambda: optpipe.Schedule.from_dict(doc)).startswith("status: must be \"optimal\"")
    doc = {"format": "optpipe-schedule/1", "instance": "x", "devices": [], "speed": 3}
    assert "speed" in error_of(lambda: optpipe.Schedule.from_dict(doc))


def test_a_schedule_for_another_instance(tiny):
    other = optpipe.schedule(optpipe.Instance.from_file(instance_path("uniform-4x8")))
    violations = optpipe.validate(tiny, other)
    assert [v.rule for v in violations] == ["device-count"]
    assert "the schedule has 4 device lists, the instance 2 devices" in violations[0].message
    with pytest.raises(optpipe.InputError, match=r"\[device-count\]"):
        optpipe.simulate(tiny, other)


def test_gpu_bounds_without_a_gpu_say_so(tiny):
    # The module is built without CUDA: asking for the GPU is an input error naming the option.
    with pytest.raises(optpipe.InputError, match=r"--bounds gpu: "):
        optpipe.solve(tiny, bounds="gpu")
