-- Nexmark q4, average price per category: Flink's query averages, per
-- category, the winning bid of each auction (the highest bid placed
-- between its start and its expiry).
-- Adapted: Clink refuses an aggregate over an updating input, so this is
-- Flink's inner query alone: the winning bid of each auction, an updating
-- result (each new highest bid updates its auction's row); the average
-- per category is left out. The join is bounded in event time so that it
-- is an interval join whose state is freed: a bid joins an auction when
-- A.dateTime <= B.dateTime <= A.dateTime + 20 s and B.dateTime <=
-- A.expires, the same as Flink's B.dateTime BETWEEN A.dateTime AND
-- A.expires because no auction lasts 20 s (the generator's auctions last
-- at most 2 * 1666 events: 20 s at 167 events/s; the suite runs at
-- 100 000). Flink's comma join is written JOIN ... ON.
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q4 (id BIGINT, category BIGINT, final BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q4
SELECT A.id, A.category, MAX(B.price) AS final
FROM auction AS A
JOIN bid AS B
  ON A.id = B.auction
 AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '20' SECOND
 AND B.dateTime <= A.expires
GROUP BY A.id, A.category;
