-- Sensor readings from Kafka into ClickHouse, one row per sensor and
-- 10-second window, on a Clink cluster. The option keys are bare words,
-- as in Flink's tutorials (quoted keys work the same). run.sh substitutes
-- the broker address and the ClickHouse port below.
--
-- The source is unbounded: windows fire as the watermark (the newest event
-- time minus 3 s, per partition; the source's is their minimum) passes
-- their end, and the last window of each sensor never fires. The 8 sensor
-- ids hash to partitions 0, 1 and 3 only: without idle_timeout_ms the
-- empty partition 2 would hold the watermark back for ever. The sink is at
-- least once: a job restarted from its newest checkpoint inserts the
-- windows fired since then again, identical; the ReplacingMergeTree table
-- collapses them. Checkpoints every 5 s (run.sh kills the Worker 4 s after
-- one) leave a few windows to replay; a shorter interval replays fewer.
--
-- ClickHouse: port 9000 is the native protocol (clickhouse-go, with LZ4);
-- port = '8123' would insert over the HTTP interface instead, the same
-- rows. The sink finds out at submission which one the port speaks
-- (docs/clickhouse.md).
SET execution.checkpointing.interval = '5s';

CREATE TABLE readings (
  sensor_id STRING,
  ts        BIGINT,
  temp_c    DOUBLE
) WITH (
  connector         = 'kafka',
  brokers           = 'localhost:9092',
  topic             = 'readings',
  format            = 'json',
  event_time_column = 'ts',
  watermark_lag_ms  = '3000',
  idle_timeout_ms   = '5000'
);

CREATE TABLE sensor_window_stats (
  sensor_id    STRING,
  window_start BIGINT,
  window_end   BIGINT,
  readings     BIGINT,
  avg_temp     DOUBLE,
  min_temp     DOUBLE,
  max_temp     DOUBLE
) WITH (
  connector         = 'clickhouse',
  host              = 'localhost',
  port              = '9000',
  database          = 'default',
  table             = 'sensor_window_stats',
  batch_interval_ms = '500'
);

INSERT INTO sensor_window_stats
SELECT sensor_id, window_start, window_end,
       COUNT(*)    AS readings,
       AVG(temp_c) AS avg_temp,
       MIN(temp_c) AS min_temp,
       MAX(temp_c) AS max_temp
FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
