"""The Spark engine's continuous mode: long-running workers, tuples over ZeroMQ.

``worker.py`` runs in each worker (a Spark barrier task); ``driver.py`` is the driver's
side (placement, commands, reports); ``threads.py`` runs the same workers in threads.
Spark itself is only in ``engines/spark/continuous.py``, which launches the stage.
"""
