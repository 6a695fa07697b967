"""User Python out of process: a bounded pool of reused worker processes.

`calls` is the API (a function of a file, or inline code, called with JSON arguments, returning
JSON data); `pool` hands out workers and replaces the ones that die; `process` is one worker seen
from ci-grade; `worker` is the program a worker runs; `protocol` frames the messages between them.
Whatever user code does (exit, crash, hang), it costs its own call an error, never the run.
"""
