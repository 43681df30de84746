-- Nexmark q14, calculation: converted prices in a range, the time of day
-- of each bid, and how often 'c' occurs in its extra field.
-- Adapted: Flink's query calls a user-defined function count_char(extra,
-- 'c'); Clink has no UDFs, so it is CHAR_LENGTH(extra) -
-- CHAR_LENGTH(REPLACE(extra, 'c', '')), the same number. HOUR(dateTime)
-- is EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3)) (dateTime is
-- BIGINT epoch ms here).
CREATE TABLE nexmark_q14 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType VARCHAR,
  dateTime BIGINT, extra VARCHAR, c_counts BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q14
SELECT auction, bidder, 0.908 * price AS price,
  CASE
    WHEN EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3)) >= 8 AND EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3)) <= 18 THEN 'dayTime'
    WHEN EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3)) <= 6 OR EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3)) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bidTimeType,
  dateTime, extra,
  CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
