"""A warm Spark session kept between runs (`offset-audit warm start`), so that a small audit, a what-if
question or a scheduled run does not pay Spark's start and a cold JVM every time.

    place     where a session's socket, log and state live, and what must match for a run to use it
              (the code, the Python, the JVM's environment); standard library only
    client    what `offset-audit` does first: hand the command line, the working folder, the environment
              and the terminal's file descriptors to the warm session, and relay signals and the exit
              status; standard library only, so that a run that finds no session loses nothing
    server    the session's process: a local SparkSession warmed by a small audit, which forks a child
              for each run (the child takes the caller's descriptors, folder and environment, and a
              session of its own over the same SparkContext)
    python_daemon   the Python workers' daemon of a warm session: it imports the decoders once, so that a
              worker forked after Spark retired the idle ones starts with them loaded

May import: the top-level modules, runtime, runs, generator.
"""
