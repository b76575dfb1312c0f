"""The fuzz suite's generators and judge: plain-data cases (files and an argv, an API call or racing processes) that
the Hypothesis tests (tests/test_fuzz_cli.py) and the long run (bench/fuzz.py) both draw from."""
