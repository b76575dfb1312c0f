"""The typed boundary of the Python API: one pydantic model of arguments per public function, checked once at the
function's edge, so misuse (`nodes="8"`, `hardware=["h100"]`, `recompute="most"`) is an ArgumentError naming the
argument, never a TypeError from inside the library.

- bounds.py: the ranges the CLI's options and the API's arguments share (one constant each, imported by both);
- types.py: the argument types (strict counts, fractions, names or paths, axis ranges) built from those bounds;
- models.py: one model per public function (check, solve, render, sweep, calibrate), extra="forbid";
- messages.py: a pydantic ValidationError as one line naming the argument and what to give;
- edge.py: `api_edge`, the decorator that validates and wraps whatever else escapes (KeyboardInterrupt aside).
"""
