"""`#SBATCH` lines count only where sbatch reads them: in column 0, above the script's first command (Slurm
src/sbatch/opt.c `_opt_batch_script`; sbatch man page). The others are named, one warning each."""

from constraints.megatron.launch_script import extract_argv
from constraints.script.lex import statements
from constraints.script.sbatch import sbatch_directives
from tests.helpers.builders import TESTS

SCRIPTS = TESTS / "data" / "scripts"


def test_a_directive_below_the_first_command_does_not_change_the_world():
    cmd = extract_argv((SCRIPTS / "sbatch_late_directives.sh").read_text())
    assert (cmd.num_nodes, cmd.gpus_per_node) == (2, 8)  # not the --nodes=4 of line 9 nor ntasks 4 of line 14
    assert cmd.distributed.get("time") is None  # line 7 is indented: a comment to sbatch


def test_each_ignored_directive_is_one_warning_naming_its_line():
    cmd = extract_argv((SCRIPTS / "sbatch_late_directives.sh").read_text())
    assert [w.split(":")[0] for w in cmd.misread] == ["line 7", "line 9", "line 14"]  # not the here-document's 12
    assert "`#SBATCH --nodes=4` is ignored by sbatch" in cmd.misread[1]
    assert "after the first command (line 8)" in cmd.misread[1]
    assert "indented" in cmd.misread[0]
    assert not cmd.warnings


def test_directives_of_a_submitted_here_document_are_read_from_its_own_top():
    text = ("#!/bin/bash\nCMD='python pretrain_gpt.py --num-layers 2'\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --nodes=3\n"
            "echo start\n#SBATCH --nodes=5\n#SBATCH --ntasks-per-node=4\nsrun bash -c \"$CMD\"\nEOF\n")
    cmd = extract_argv(text)
    assert cmd.num_nodes == 3
    assert cmd.gpus_per_node is None  # --ntasks-per-node=4 sits below `echo start`
    assert [w.split(": `")[0] for w in cmd.misread] == ["sbatch here-document (line 3):line 4",
                                                       "sbatch here-document (line 3):line 5"]
    assert sbatch_directives(text, statements(text))[1] == []  # the outer script: lines 5-8 are the here-document's, not its own


def test_blank_and_comment_lines_do_not_end_the_directives():
    text = "#!/bin/bash\n\n# job\n#SBATCH -N 2\n\t\n##SBATCH -N 9\n#SBATCH --gpus-per-node=8\nhostname\n"
    read, ignored = sbatch_directives(text, statements(text))
    assert read == ["-N 2", "--gpus-per-node=8"] and ignored == []


def test_check_reports_the_ignored_directive_with_the_world_sbatch_gives():
    from constraints.read import load_check_input

    loaded = load_check_input(str(SCRIPTS / "sbatch_late_directives.sh"), "h100-sxm-80gb", None, None)
    assert (loaded.case.placement.num_nodes, loaded.case.placement.gpus_per_node) == (2, 8)
    layout = [w.message for w in loaded.warnings if w.rule == "script_layout"]
    assert len(layout) == 3 and layout[1].startswith("line 9: `#SBATCH --nodes=4` is ignored by sbatch")
