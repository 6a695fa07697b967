"""Running a plan: the asyncio runner (`runner.py`), multi-turn rows (`conversation.py`), a row's
variables at run time (`row_vars.py`), and stopping early on a signal or time limit (`stop.py`)."""
