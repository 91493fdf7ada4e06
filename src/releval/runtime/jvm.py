"""The one place releval reaches into the driver's JVM (Py4J): the Hadoop file system of a
Delta log, and Spark's own rendering of a plan."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession


def _file_system(spark: SparkSession, folder: str):  # (Hadoop FileSystem, Path)
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the SparkSession has no JVM")
    path = jvm.org.apache.hadoop.fs.Path(folder)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def list_names(spark: SparkSession, folder: str) -> list[str]:
    """The names of the files in ``folder``, through Hadoop's file system (any storage
    Spark writes to), on the driver: no Spark job."""
    fs, path = _file_system(spark, folder)
    return [status.getPath().getName() for status in fs.listStatus(path)]


def read_text(spark: SparkSession, folder: str, name: str) -> str:
    """The text of the file ``name`` in ``folder``, read on the driver (UTF-8)."""
    fs, path = _file_system(spark, folder)
    jvm = spark.sparkContext._jvm
    stream = fs.open(jvm.org.apache.hadoop.fs.Path(path, name))
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def explain_string(df: DataFrame, mode: str) -> str:
    """``df``'s plan as ``DataFrame.explain(mode)`` prints it, as a string."""
    jvm = df.sparkSession.sparkContext._jvm
    return str(jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), mode))
