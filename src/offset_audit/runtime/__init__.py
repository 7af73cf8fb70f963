"""What every run needs, whichever command it is: the SparkSession and its JVM, the settings, progress
on stderr, and the checks made before Spark starts. The commands (runs/), the API, the CLI and the warm
session use it; it knows no command.

    session      the one place a SparkSession is built (local, spark-submit's, Spark Connect), and the
                 run's writer
    local_jvm    a local session's JVM options, and the class archive small runs map
    gateway      a local session's JVM started, its stderr passed on without the JDK's incubator warning
    config       the defaults, --conf and the flags -> Settings, each value checked
    progress     which stage runs, on stderr
    preflight    the checks of options, paths and inputs that run before Spark starts

May import: the top-level modules, layouts, inputs, decoding, outputs.
"""
