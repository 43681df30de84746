-- Sensor pipeline: per-sensor 10-second tumbling windows over JSON readings.
CREATE TABLE readings (
  sensor_id   STRING,
  ts          BIGINT,
  temp_c DOUBLE
) WITH (
  'connector'         = 'file',
  'path'              = 'data/readings.jsonl',
  'format'            = 'json',
  'event_time_column' = 'ts',
  'watermark_lag_ms'  = '3000'
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
