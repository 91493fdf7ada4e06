"""The benchmarks' memory reading: this process's peak and its Spark driver JVM's."""

from bench.memory import peak_rss_mib


def test_the_python_process_and_the_sessions_jvm_have_a_peak(spark):
    spark.range(10).count()
    memory = peak_rss_mib()
    # pytest with pyspark loaded holds tens of MiB at least; the local session's JVM, hundreds
    assert memory["python_mib"] > 20
    assert memory["jvm_mib"] > 100
