"""User Python and JavaScript out of process: bounded pools of reused worker processes.

`calls` is the Python API (a function of a file, or inline code, called with JSON arguments,
returning JSON data) and `node` the Node.js one (functions and provider classes of JavaScript and
TypeScript files); `dispatch` picks by a file's extension. `pool` hands out workers and replaces
the ones that die; `process` is one worker seen from ci-grade; `worker` and `node_worker.mjs` are
the programs workers run; `protocol` frames the messages between them. Whatever user code does
(exit, crash, hang), it costs its own call an error, never the run.
"""
