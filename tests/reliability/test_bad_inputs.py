"""Every bad input is one line on stderr naming what to fix, exit code 2, and leaves no record and
no artifact folder behind. Each case runs the console entry (``rlexp.cli.main``, what the ``rlexp``
script calls) against a copy of the shared test store, in this process: an interpreter per case
importing torch and transformers cost ~100 CPU-seconds more for 46 cases and tests nothing else
(tests/foundation/test_cli.py runs the script itself in a subprocess)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlexp import cli
from rlexp.store import Store

pytestmark = pytest.mark.slow


def _sandbox(world: Path) -> Path:
    return next((world / "runs" / "artifacts" / "data").glob("*/sandbox"))


def _model(world: Path, rm_id: str) -> Path:
    store = Store(world / "runs")
    return store.resolve(store.get(rm_id, "train_rm").artifacts["model"])


@pytest.fixture(scope="module")
def fixtures(world_root: Path, rms: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Malformed models and benchmark files, built from the test store's real ones."""
    out = tmp_path_factory.mktemp("bad")
    model = _model(world_root, rms["qwen_general"])
    paths: dict[str, Path] = {}

    def copy(name: str) -> Path:
        dst = out / name
        shutil.copytree(model, dst)
        return dst

    remote = copy("remote_code")
    cfg = json.loads((remote / "config.json").read_text())
    cfg["model_type"] = "rlexp_custom"  # an architecture transformers does not ship: only the folder's code has it
    cfg["auto_map"] = {"AutoConfig": "custom.CustomConfig",
                       "AutoModelForSequenceClassification": "custom.CustomModel"}
    (remote / "config.json").write_text(json.dumps(cfg))
    paths["remote_code"] = remote
    pickled = copy("pickle_only")
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    paths["pickle_only"] = pickled
    no_config = copy("no_config")
    (no_config / "config.json").unlink()
    paths["no_config"] = no_config
    drift = copy("drift")  # a Qwen2 folder whose tokenizer.json has its own pre-tokenizer
    tok = json.loads((drift / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    (drift / "tokenizer.json").write_text(json.dumps(tok))
    paths["drift"] = drift

    rb2 = pq.read_table(_sandbox(world_root) / "rb2" / "test.parquet")
    (out / "rb2_empty").mkdir()
    pq.write_table(rb2.slice(0, 0), out / "rb2_empty" / "test.parquet")
    paths["rb2_empty"] = out / "rb2_empty" / "test.parquet"
    (out / "rb2_nocol").mkdir()
    pq.write_table(rb2.drop(["chosen"]), out / "rb2_nocol" / "test.parquet")
    paths["rb2_nocol"] = out / "rb2_nocol" / "test.parquet"
    (out / "rb2_badtype").mkdir()
    pq.write_table(rb2.set_column(rb2.schema.get_field_index("chosen"), "chosen",
                                  pa.array(["not a list"] * rb2.num_rows)), out / "rb2_badtype" / "test.parquet")
    paths["rb2_badtype"] = out / "rb2_badtype" / "test.parquet"
    (out / "prompts.jsonl").write_text('{"prompt_id": "a", "prompt": "hi"}\n{not json\n')
    paths["bad_jsonl"] = out / "prompts.jsonl"
    (out / "a_file").write_text("x")
    paths["file"] = out / "a_file"
    (out / "gsm8k_nocol.jsonl").write_text('{"question": "What is 1 + 1?"}\n')
    paths["gsm8k_nocol"] = out / "gsm8k_nocol.jsonl"
    vote = {"conversation_id": "c1", "user_id": "user1", "context": [{"role": "user", "content": "Hi?"}],
            "chosen": [{"role": "model", "content": "a"}, {"role": "model", "content": "b"}],
            "rejected": {"role": "model", "content": "c"}, "split": "test", "flip": False}
    (out / "arena_list.jsonl").write_text(json.dumps(vote) + "\n")
    paths["arena_list"] = out / "arena_list.jsonl"
    pair = {"id": "p1", "prompt": "Name a colour.", "chosen": "Blue.", "rejected": "Seven."}
    (out / "one_pair.jsonl").write_text(json.dumps(pair) + "\n")
    paths["one_pair"] = out / "one_pair.jsonl"
    (out / "empty_prompts.jsonl").write_bytes(b"")
    paths["empty_prompts"] = out / "empty_prompts.jsonl"
    # A general prompt as rlexp's format has it, without the verifier's hidden fields.
    (out / "no_hidden.jsonl").write_text(json.dumps({"prompt_id": "q1", "prompt": "What is 2 + 2?", "kind": "general"}) + "\n")
    paths["no_hidden"] = out / "no_hidden.jsonl"
    (out / "loop").symlink_to("loop")  # a symbolic link to itself: ELOOP on any use
    paths["loop"] = out / "loop"
    (out / "fresh").mkdir()  # a root without a sandbox or a lineage: nothing may be built in it
    paths["fresh"] = out / "fresh"
    return paths


def _cuda_case() -> tuple[str, str]:
    """A ``runtime.device`` no visible GPU matches, and what its error says: ``cuda`` without a GPU,
    one index past the last with GPUs."""
    import torch

    count = torch.cuda.device_count()
    return ("cuda", "no CUDA device is visible") if count == 0 else (f"cuda:{count}", "CUDA device(s) are visible")


def _cases(world: Path, rms: dict[str, str], f: dict[str, Path]) -> list[tuple[str, list[str], dict[str, str], str]]:
    """(name, argv, extra env, a substring the one-line error must contain)."""
    rm = rms["llama_general"]
    none = ["logger=none"]
    device, no_gpu = _cuda_case()
    return [
        ("unknown task", ["trian_rm"], {}, "unknown task"),
        ("misspelled key", ["env", "sede=3"], {}, "sede"),
        ("wrong type", ["env", "seed=abc"], {}, "seed=abc"),
        ("unknown config option", ["train_rm", "model=nope", *none], {}, "nope"),
        ("unknown data mix", ["train_rm", "data=nope", *none], {}, "nope"),
        ("bad second sweep value", ["train_rm", "-m", "trainer.num_train_epochs=1,abc", *none], {}, "abc"),
        ("bad sweep value of another key", ["env", "-m", "seed=1,2", "runtime.threads=1,x"], {}, "runtime.threads=x"),
        ("root is a file", ["env", *none], {"RLEXP_ROOT": str(f["file"])}, "not writable"),
        ("root is read-only", ["train_rm", *none], {"RLEXP_ROOT": "/sys/rlexp-test"}, "not writable"),
        ("store under a file", ["env", f"paths.store={f['file']}/store"], {}, "not writable"),
        ("unknown lineage", ["lineage", "build", "nope"], {}, "unknown lineage 'nope'"),
        ("store ls unknown task", ["store", "ls", "--task", "nope"], {}, "is not a task"),
        ("store show unknown id", ["store", "show", "ffffffffffffffff"], {}, "no unique record"),
        ("rm required", ["evaluate", *none], {}, "rm is required"),
        ("unknown rm record", ["evaluate", "rm=ffffffffffffffff", *none], {}, "ffffffffffffffff"),
        ("rm folder missing", ["evaluate", f"rm={f['file']}_nope/model", *none], {}, "does not exist"),
        ("rm folder without config", ["evaluate", f"rm={f['no_config']}", *none], {}, "no config.json"),
        ("rm folder with pickle weights", ["evaluate", f"rm={f['pickle_only']}", *none], {}, "safetensors"),
        ("rm needs remote code", ["evaluate", f"rm={f['remote_code']}", "benchmark.rb2.limit=4", "benchmark=rb2", *none],
         {}, "custom code"),
        ("empty benchmark file", ["evaluate", f"rm={rm}", "benchmark=rb2", f"benchmark.rb2.source={f['rb2_empty'].parent}",
                                  *none], {}, str(f["rb2_empty"].parent)),
        ("benchmark file missing a column", ["evaluate", f"rm={rm}", "benchmark=rb2",
                                             f"benchmark.rb2.source={f['rb2_nocol'].parent}", *none], {}, "chosen"),
        ("benchmark column of the wrong type", ["evaluate", f"rm={rm}", "benchmark=rb2",
                                                f"benchmark.rb2.source={f['rb2_badtype'].parent}", *none], {}, "chosen"),
        ("unknown profile mode", ["evaluate", f"rm={rm}", "profile.mode=rawr", *none], {}, "rawr"),
        ("comparison set of the wrong schema", ["evaluate", f"rm={rm}", "benchmark=arena",
                                                f"benchmark.arena.source={_sandbox(world) / 'prb'}", *none], {},
         "this is a Personalized RewardBench file"),
        ("comparison vote whose chosen is a list", ["evaluate", f"rm={rm}", "benchmark=arena",
                                                    f"benchmark.arena.source={f['arena_list']}", *none], {},
         "field 'chosen': expected one message object"),
        ("unknown user-context mode", ["evaluate", f"rm={rm}", "benchmark=arena", "benchmark.arena.user_context=diary",
                                       *none], {}, "diary"),
        ("persona without a survey", ["evaluate", f"rm={rm}", "benchmark=arena", "benchmark.arena.user_context=persona",
                                      f"benchmark.arena.source={f['arena_list']}", *none], {}, "benchmark.arena.survey"),
        ("unknown tokenizer source", ["evaluate", f"rm={f['drift']}", "benchmark=rb2", "benchmark.rb2.limit=4",
                                      "scorer.tokenizer=bogus", *none], {}, "scorer.tokenizer"),
        ("tokenizer drift in parity mode", ["evaluate", f"rm={f['drift']}", "benchmark=rb2", "benchmark.rb2.limit=4",
                                            "scorer=rb2_reference", *none], {}, "tokenizer drift"),
        ("absurd generation length", ["sample", "model=tiny_llama", "prompts=general", "sampling.max_new_tokens=1000000000",
                                      *none], {}, "sampling.max_new_tokens=1000000000"),
        ("zero samples", ["sample", "model=tiny_llama", "sampling.n=0", *none], {}, "sampling.n"),
        ("malformed prompt file", ["sample", "model=tiny_llama", f"prompts.source={f['bad_jsonl']}", *none], {},
         str(f["bad_jsonl"].name)),
        ("ppo response length 0", ["ppo", f"rm={rm}", "model=tiny_llama", "trainer.response_length=0", *none], {},
         "response_length"),
        ("bon unknown rm", ["bon", "rm=ffffffffffffffff", "model=tiny_llama", *none], {}, "ffffffffffffffff"),
        ("suite unknown task", ["bon", f"rm={rm}", "model=tiny_llama", "prompts=gsm8k", "+prompts.tasks.gsm9k.limit=5",
                                *none], {}, "unknown downstream task 'gsm9k'"),
        ("suite file missing a column", ["bon", f"rm={rm}", "model=tiny_llama", "prompts=gsm8k",
                                         f"prompts.tasks.gsm8k.source={f['gsm8k_nocol']}", "prompts.tasks.gsm8k.shots=0",
                                         *none], {}, "gsm8k needs column 'answer'"),
        ("suite without a preference judge", ["bon", f"rm={rm}", "model=tiny_llama", "prompts=rb2_suite_fixtures",
                                              *none], {}, "judge.rm"),
        ("grader on sandbox prompts", ["bon", f"rm={rm}", "model=tiny_llama", "prompts=general", "judge=grader", *none],
         {}, "judge=grader"),
        ("correlate alpha", ["correlate", "alpha=2", *none], {}, "alpha"),
        ("correlate n_boot", ["correlate", "n_boot=-1", *none], {}, "n_boot"),
        ("correlate headline mode", ["correlate", "headline.prb_mode=rawr", *none], {}, "headline.prb_mode"),
        ("correlate two selections", ["correlate", "records=[a]", "rms=[b]", *none], {}, "only one"),
        ("correlate unknown record", ["correlate", "records=[ffffffffffffffff]", *none], {}, "not found"),
        ("study repeated seed", ["study", "experiment=quick", "study.seeds=[0,0]", *none], {}, "study.seeds"),
        ("study override of no task", ["study", "experiment=quick", "+study.overrides.nope=[x]", *none], {},
         "study.overrides.nope"),
        # Reliability round two, group 4: settings the typed nodes refuse before any model loads.
        ("negative seed", ["env", "seed=-1", *none], {}, "seed=-1"),
        ("one-row preference file", ["train_rm", "model=tiny_llama", "data=local", f"data.sources.local={f['one_pair']}",
                                     *none], {}, f"{f['one_pair']}: the mix holds 1 preference pair(s)"),
        ("scorer max_length 0", ["evaluate", f"rm={rm}", "benchmark=rb2", "benchmark.rb2.limit=4", "scorer.max_length=0",
                                 *none], {}, "scorer.max_length=0"),
        ("cuda without a visible GPU", ["train_rm", "model=tiny_llama", f"runtime.device={device}", *none], {}, no_gpu),
        ("unknown scorer device", ["evaluate", f"rm={rm}", "benchmark=rb2", "benchmark.rb2.limit=4",
                                   "scorer.device=banana", *none], {}, "scorer.device='banana' is not a device"),
        ("empty prompt file", ["sample", "model=tiny_llama", f"prompts.source={f['empty_prompts']}", *none], {},
         f"{f['empty_prompts']}: holds no prompts"),
        ("zero prompts", ["sample", "model=tiny_llama", "prompts=general", "prompts.limit=0", *none], {}, "prompts.limit=0"),
        ("nan temperature", ["sample", "model=tiny_llama", "prompts=general", "sampling.temperature=nan", *none], {},
         "sampling.temperature=nan"),
        ("zero prompts per batch", ["sample", "model=tiny_llama", "prompts=general", "sampling.batch_prompts=0", *none],
         {}, "sampling.batch_prompts=0"),
        ("zero prompts per chunk", ["sample", "model=tiny_llama", "prompts=general", "sampling.chunk_prompts=0", *none],
         {}, "sampling.chunk_prompts=0"),
        ("prompts without the judge's hidden fields", ["bon", f"rm={rm}", "model=tiny_llama", "sampling.n=2",
                                                       f"prompts.source={f['no_hidden']}", *none], {},
         f"{f['no_hidden']}: prompt 'q1': hidden field 'task'"),
        ("experiment name of 300 characters", ["env", "experiment_name=" + "x" * 300, *none], {}, "experiment_name"),
        ("root a symlink loop", ["env", *none], {"RLEXP_ROOT": str(f["loop"])}, "loop of symbolic links"),
        ("study step value a node refuses", ["study", "experiment=quick", "study.overrides.bon=['sampling.batch_prompts=0']",
                                             *none], {}, "sampling.batch_prompts=0"),
        # Issue 64: a served judge that is down fails the study before any RM trains or pool is sampled.
        ("study with its judge down", ["study", "experiment=quick", "study.prompt_sets=[personalized]", "study.ppo=[]",
                                       "study.overrides.bon=['judge=llm','judge.model=m','judge.endpoint=http://127.0.0.1:9/v1']",
                                       *none], {}, "127.0.0.1:9"),
        # In a root of its own, where the lineage is not built: the tiny spec's context refuses it first.
        ("generation longer than a tiny context", ["sample", "model=tiny_llama", "sampling.max_new_tokens=5000", *none],
         {"RLEXP_ROOT": str(f["fresh"])}, "sampling.max_new_tokens=5000 does not fit the context of tiny_llama"),
    ]


def _snapshot(world: Path) -> set[str]:
    runs = world / "runs"
    return {str(p.relative_to(runs)) for sub in ("records", "artifacts") for p in (runs / sub).glob("*/*")}


def _run_cli(argv: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``rlexp argv`` in this process with ``env`` added: its exit code and stderr. Whatever a run
    changes for the process (environment, sys.argv, torch threads, Hydra's log handlers) is put back."""
    import torch

    saved_env, saved_argv, threads = dict(os.environ), sys.argv[:], torch.get_num_threads()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    os.environ.update(env)
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # Hydra apps exit instead of returning; as the interpreter maps the code
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        torch.set_num_threads(threads)
        root.handlers[:] = handlers
        root.setLevel(level)
    return code, capsys.readouterr().err


def test_bad_inputs_are_one_line_exit_2_and_leave_nothing(world_root: Path, rms: dict[str, str],
                                                          fixtures: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # A copy of the shared store: tests in another worker process may add records to the shared one
    # meanwhile, and this test asserts that nothing was added.
    world = tmp_path / "world"
    shutil.copytree(world_root / "runs", world / "runs", ignore=shutil.ignore_patterns(".*.lock"))
    cases = _cases(world, rms, fixtures)
    assert len(cases) >= 30 and len({c[0] for c in cases}) == len(cases)
    before = _snapshot(world)

    failed = {}
    for name, argv, extra, expect in cases:
        code, stderr = _run_cli(argv, {"RLEXP_ROOT": str(world), **extra}, capsys)
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("rlexp")]
        if code != 2:
            failed[name] = f"exit {code}: {stderr[-600:]}"
        elif "Traceback" in stderr or len(errors) != 1 or lines[-1] != errors[0]:
            failed[name] = f"not one line: {stderr[-600:]}"
        elif expect not in errors[0]:
            failed[name] = f"{expect!r} not in {errors[0]!r}"
    with capsys.disabled():
        print(f"bad inputs: {len(cases)} tried, {len(cases) - len(failed)} passed")
    assert not failed, failed
    assert _snapshot(world) == before, sorted(_snapshot(world) ^ before)
    # Nothing at all in the root where no lineage was built: not the sandbox, not a job folder.
    assert not list(fixtures["fresh"].rglob("*")), sorted(map(str, fixtures["fresh"].rglob("*")))[:5]
