"""`solve --trials`' run_trials.sh names the hardware in its closing hint: the hint was a double-quoted echo, where a
`$(...)` in a hardware profile's path ran. Now the whole message is one single-quoted word, and TRIALS.md escapes it."""
import shutil
import subprocess

import pytest

from templates.trial_files import run_all_script

BASH = shutil.which("bash")


@pytest.mark.skipif(BASH is None, reason="bash not installed")
@pytest.mark.parametrize("fmt", ["torchrun", "slurm"])
def test_a_hostile_hardware_path_in_the_hint_runs_nothing(tmp_path, fmt):
    hardware = "/hw/$(touch PWNED1)`touch PWNED2`'q'\"d\"\n;touch PWNED3.yaml"
    script = tmp_path / "run_trials.sh"
    script.write_text(run_all_script([], fmt, hardware))
    proc = subprocess.run([BASH, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("PWNED*"))
    assert proc.stdout.startswith("next: shardplan calibrate logs/*.log --hardware '/hw/$(touch PWNED1)`touch PWNED2`")
