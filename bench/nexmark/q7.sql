-- Nexmark q7, highest bid: the bids with the highest price of each 10 s
-- window (a bid at exactly a window's end also counts for it, as in
-- Flink's BETWEEN).
-- Adapted: the time bounds stand in the ON clause (in Flink's WHERE), so
-- that Clink plans an interval join whose state is freed as windows
-- close; window_end and dateTime are both BIGINT epoch ms. Both
-- references to bid share one reading of the topic.
CREATE TABLE nexmark_q7 (auction BIGINT, price BIGINT, bidder BIGINT, dateTime BIGINT, extra VARCHAR)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
FROM bid AS B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) AS B1
  ON B.price = B1.maxprice
 AND B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
