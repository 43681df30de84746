-- Nexmark q4, average price per category: per category, the average of
-- the winning bid of each auction (the highest bid placed between its
-- start and its expiry), as Flink's query. The winning bids are an
-- updating result (each new highest bid updates its auction's row); the
-- outer GROUP BY retracts an auction's old winning bid and adds the new.
-- Adapted: the join is bounded in event time so that it is an interval
-- join whose state is freed: a bid joins an auction when A.dateTime <=
-- B.dateTime <= A.dateTime + 20 s and B.dateTime <= A.expires, the same
-- as Flink's B.dateTime BETWEEN A.dateTime AND A.expires because no
-- auction lasts 20 s (the generator's auctions last at most 2 * 1666
-- events: 20 s at 167 events/s; the suite runs at 100 000). Flink's comma
-- join is written JOIN ... ON. Flink's AVG of a BIGINT is a BIGINT (the
-- sum divided by the count, truncated); Clink's AVG is a DOUBLE, so it is
-- cast to BIGINT, which truncates the same way.
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q4 (id BIGINT, final BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q4
SELECT Q.category, CAST(AVG(Q.final) AS BIGINT)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction AS A
  JOIN bid AS B
    ON A.id = B.auction
   AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '20' SECOND
   AND B.dateTime <= A.expires
  GROUP BY A.id, A.category
) AS Q
GROUP BY Q.category;
