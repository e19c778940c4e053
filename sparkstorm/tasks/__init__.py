"""What runs wherever a task lives: the task runner, spout and bolt executors, snapshots.

The same code runs in the driver for the ``local`` engine and in Spark's Python workers
for the ``spark`` engine (Storm's ``executor`` package): it never imports an engine or
the control plane, so whatever holds a task can run it.
"""
