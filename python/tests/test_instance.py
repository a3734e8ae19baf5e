"""optpipe.Instance and optpipe.generate(): the file form in and out (dict, JSON text, file,
pickle), the properties, and generate() against `optpipe generate`."""

import json
import pickle
import warnings

import pytest

import optpipe
from conftest import INSTANCES, instance_path, run_cli


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_instance_round_trips(path, tmp_path):
    inst = optpipe.Instance.from_file(path)
    assert inst.name == path.stem
    doc = inst.to_dict()
    assert doc["format"] == "optpipe-instance/1"
    # dict -> Instance -> dict, JSON text, a file and pickle all give the same instance back.
    assert optpipe.Instance.from_dict(doc) == inst
    assert optpipe.Instance.from_dict(doc).to_dict() == doc
    assert optpipe.Instance.from_json(inst.to_json()) == inst
    assert optpipe.Instance.from_json(json.dumps(doc)) == inst
    inst.save(tmp_path / "copy.json")
    assert optpipe.Instance.from_file(tmp_path / "copy.json") == inst
    assert optpipe.Instance.from_file(str(tmp_path / "copy.json")) == inst
    assert pickle.loads(pickle.dumps(inst)) == inst
    # The file as written by hand reads to the same instance as its dict.
    assert optpipe.Instance.from_dict(json.loads(path.read_text())) == inst


def test_properties_of_a_v_instance():
    inst = optpipe.Instance.from_file(instance_path("v-4x8"))
    assert inst.num_devices == 4
    assert inst.num_stages == 8
    assert inst.microbatches == 8
    assert inst.placement == "V (two stages per device)"
    assert inst.split_backward is True
    assert inst.offload_levels == [0.0, 1.0]
    assert len(inst.comm) == 7
    assert [s["device"] for s in inst.stages] == [0, 1, 2, 3, 3, 2, 1, 0]
    assert len(inst.devices) == 4 and "memory_limit" in inst.devices[0]
    assert "4 devices" in repr(inst)


def test_instances_differ_when_a_field_does(tiny):
    doc = tiny.to_dict()
    doc["stages"][1]["forward"] = 2.5
    other = optpipe.Instance.from_dict(doc)
    assert other != tiny
    assert other.stages[1]["forward"] == 2.5
    assert tiny.stages[1]["forward"] == 1.0  # the original is unchanged


def test_byte_strings_and_numpy_like_numbers(tiny):
    doc = tiny.to_dict()

    class Bytes:  # anything with __index__ is an integer, with __float__ a number
        def __index__(self):
            return 15 * 2**30

    doc["devices"][0]["memory_limit"] = Bytes()
    doc["devices"][1]["memory_limit"] = "15GiB"
    inst = optpipe.Instance.from_dict(doc)
    assert inst.devices[0]["memory_limit"] == inst.devices[1]["memory_limit"] == 15 * 2**30


def test_questionable_fields_warn(tiny):
    doc = tiny.to_dict()
    doc["split_backward"] = False
    for s in doc["stages"]:
        s["weight_activation"] = 2**20  # legal, but fixed at 0 without a split backward
    with pytest.warns(UserWarning, match="weight_activation"):
        optpipe.Instance.from_dict(doc)


def test_generate_equals_the_command(cli, tmp_path):
    out = tmp_path / "gen.json"
    run_cli(cli, "generate", "--model", "gpt3-1.5b", "--devices", 4, "--microbatches", 8, "--placement", "v",
            "--memory-limit", "3act", "--offload-levels", "0,0.5,1", "--name", "g", "-q", "-o", out)
    inst = optpipe.generate("gpt3-1.5b", devices=4, microbatches=8, placement="v", memory_limit="3act",
                            offload_levels=[1, 0.5], name="g")
    assert inst == optpipe.Instance.from_file(out)
    assert inst.name == "g"
    assert inst.offload_levels == [0.0, 0.5, 1.0]
    assert inst.num_stages == 8


def test_generate_explicit_shape_and_defaults(cli, tmp_path):
    out = tmp_path / "gen.json"
    run_cli(cli, "generate", "--layers", 4, "--hidden", 256, "--heads", 4, "--vocab", 1000, "--seq", 128,
            "--devices", 2, "--microbatches", 4, "--memory-limit", "40GiB", "--mlp", "swiglu", "-q", "-o", out)
    inst = optpipe.generate(layers=4, hidden=256, heads=4, vocab=1000, seq=128, devices=2, microbatches=4,
                            memory_limit=40 * 2**30, mlp="swiglu")
    assert inst == optpipe.Instance.from_file(out)
    assert inst.name == "custom-2x4"
    # The generated instance reads back exactly from its own file form.
    assert optpipe.Instance.from_dict(inst.to_dict()) == inst


def test_generate_parallelism_equals_the_command(cli, tmp_path):
    out = tmp_path / "gen.json"
    run_cli(cli, "generate", "--model", "llama2-13b", "--devices", 4, "--microbatches", 8, "--tensor-parallel", 2,
            "--data-parallel", 4, "--zero", 1, "--no-sequence-parallel", "-q", "-o", out)
    inst = optpipe.generate("llama2-13b", devices=4, microbatches=8, tensor_parallel=2, data_parallel=4, zero=1,
                            sequence_parallel=False)
    assert inst == optpipe.Instance.from_file(out)
    # Tensor parallelism splits every layer: less static memory per GPU than without it.
    plain = optpipe.generate("llama2-13b", devices=4, microbatches=8)
    assert inst != plain
    assert inst.to_dict()["devices"][1]["static_memory"] != plain.to_dict()["devices"][1]["static_memory"]
    with pytest.raises(optpipe.InputError, match=r"^zero: stage 2"):
        optpipe.generate("llama2-13b", devices=4, microbatches=8, zero=2)
    with pytest.raises(optpipe.InputError, match=r"^tensor_parallel: must be a positive integer"):
        optpipe.generate("llama2-13b", devices=4, microbatches=8, tensor_parallel=0)


def test_generate_errors_name_the_field():
    with pytest.raises(optpipe.InputError, match=r"^model: unknown preset \"gpt3-99b\" \(choose one of: .*gpt3-1\.5b"):
        optpipe.generate("gpt3-99b", devices=8, microbatches=24)
    with pytest.raises(optpipe.InputError, match=r"^devices: required"):
        optpipe.generate("gpt3-1.5b", microbatches=24)
    with pytest.raises(optpipe.InputError, match=r"^model: give a preset or an explicit shape \(layers is missing"):
        optpipe.generate(devices=2, microbatches=4)
    with pytest.raises(optpipe.InputError, match=r"^placement: unknown placement \"zigzag\""):
        optpipe.generate("gpt3-1.5b", devices=8, microbatches=24, placement="zigzag")
    with pytest.raises(optpipe.InputError, match=r"^model\.heads"):
        optpipe.generate(layers=4, hidden=100, heads=3, vocab=1000, seq=128, devices=2, microbatches=4)
    with pytest.raises(optpipe.InputError, match=r"^offload_levels: 2 is not a fraction"):
        optpipe.generate("gpt3-1.5b", devices=8, microbatches=24, offload_levels=[0, 2])
    with pytest.raises(optpipe.InputError, match=r"--split"):  # the library's suggestion
        optpipe.generate("llama2-13b", devices=16, microbatches=32)


def test_generate_warns_when_nothing_fits():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optpipe.generate("gpt3-1.5b", devices=2, microbatches=4, memory_limit="1GiB")
    assert caught and "limit" in str(caught[0].message)
