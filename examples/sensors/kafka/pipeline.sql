-- Sensor pipeline over Kafka: the same windows as ../pipeline.sql, read from
-- a topic of 4 partitions (records keyed by sensor_id, so each sensor's
-- readings stay in order in one partition). Each partition has its own
-- watermark; 'scan_bounded' = 'latest' reads up to the end offsets seen at
-- start-up and then ends, so every window fires and the run terminates.
CREATE TABLE readings (
  sensor_id   STRING,
  ts          BIGINT,
  temp_c DOUBLE
) WITH (
  'connector'         = 'kafka',
  'brokers'           = 'localhost:9092',
  'topic'             = 'readings',
  'format'            = 'json',
  'event_time_column' = 'ts',
  'watermark_lag_ms'  = '3000',
  'scan_bounded'      = 'latest'
);

CREATE TABLE sensor_windows (
  sensor_id    STRING,
  window_start BIGINT,
  window_end   BIGINT,
  readings     BIGINT,
  avg_temp     DOUBLE,
  min_temp     DOUBLE,
  max_temp     DOUBLE
) WITH (
  'connector' = 'file',
  'path'      = 'out',
  'format'    = 'json'
);

INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end,
       COUNT(*)         AS readings,
       AVG(temp_c) AS avg_temp,
       MIN(temp_c) AS min_temp,
       MAX(temp_c) AS max_temp
FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
