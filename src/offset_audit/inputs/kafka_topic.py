"""A live cluster, read in batch through Spark's Kafka source (earliest to latest)."""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from offset_audit.errors import ConnectorMissing, UserError
from offset_audit.settings import Settings


def kafka_package(spark: SparkSession) -> str:
    version = spark.version
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"


def read_kafka(spark: SparkSession, settings: Settings) -> DataFrame:
    if not settings.bootstrap_servers:
        raise UserError("--input-format kafka needs --bootstrap-server HOST:PORT[,HOST:PORT]")
    options = {
        "kafka.bootstrap.servers": settings.bootstrap_servers,
        "subscribe": settings.topic,
        "startingOffsets": "earliest",
        "endingOffsets": "latest",
        # Aborted transactional offset commits never reach us (reference 1.1, "Transactions").
        "kafka.isolation.level": settings.isolation_level,
        "failOnDataLoss": "false",
        **settings.kafka_options,
    }
    reader = spark.read.format("kafka")
    for name, value in options.items():
        reader = reader.option(name, value)
    try:
        return reader.load()
    except AnalysisException as err:
        if "kafka" in str(err).lower() and (
            "find data source" in str(err).lower() or "DATA_SOURCE_NOT_FOUND" in str(err)
        ):
            raise ConnectorMissing(
                "Spark's Kafka connector is not on the classpath; run with "
                f"--packages {kafka_package(spark)} (spark-submit or PYSPARK_SUBMIT_ARGS), "
                "or read a Parquet snapshot instead"
            ) from err
        raise
