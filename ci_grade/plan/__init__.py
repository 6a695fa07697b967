"""Planning: a loaded config expanded into the rows to run (`build.py`), its variables
(`variables.py`), a shard's part of the plan (`shard.py`) and the rows of a retry (`retry.py`)."""
