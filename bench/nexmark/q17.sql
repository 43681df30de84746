-- Nexmark q17, auction statistics report: per auction and day, the bids
-- in all and in three price ranges (COUNT(*) FILTER) and the lowest,
-- highest, average and total price, an updating result. As Flink's,
-- except: dateTime is BIGINT epoch ms here, so the day is
-- DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), 'yyyy-MM-dd') (days in UTC);
-- Flink's AVG of a BIGINT is a BIGINT (the sum divided by the count,
-- truncated), Clink's a DOUBLE, so it is cast to BIGINT, which truncates
-- the same way.
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q17 (auction BIGINT, `day` VARCHAR, total_bids BIGINT,
  rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT,
  min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q17
SELECT
  auction,
  DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), 'yyyy-MM-dd') AS `day`,
  COUNT(*) AS total_bids,
  COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
  COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  MIN(price) AS min_price,
  MAX(price) AS max_price,
  CAST(AVG(price) AS BIGINT) AS avg_price,
  SUM(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), 'yyyy-MM-dd');
