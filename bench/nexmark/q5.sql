-- Nexmark q5, hot items: the auctions with the most bids in each 10 s
-- window sliding by 2 s (all of them when several tie).
-- Adapted: in Flink's query the largest count per window (MaxBids) is an
-- unwindowed GROUP BY over a window aggregate, an updating result that
-- Clink cannot join. Here MaxBids is a window aggregate itself: the
-- per-auction counts, grouped by a 2 s tumbling window over their
-- window_end (every row of one hopping window, and only those, fall into
-- one such window, as window ends are 2 s apart), and the two are joined
-- on that window end (an interval join of width zero, freed as windows
-- close). Same rows as Flink's; a window's rows come out when the
-- watermark passes its end + 2 s. Both references to bid share one
-- reading of the topic.
CREATE TABLE nexmark_q5 (auction BIGINT, num BIGINT)
WITH ('connector' = 'blackhole');

CREATE VIEW auction_bids AS
SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
FROM auction_bids AS AuctionBids
JOIN (
  SELECT MAX(num) AS maxn, window_start AS endtime, window_end AS fired
  FROM auction_bids
  GROUP BY TUMBLE(endtime, INTERVAL '2' SECOND)
) AS MaxBids
  ON AuctionBids.endtime = MaxBids.endtime
 AND AuctionBids.endtime BETWEEN MaxBids.fired - INTERVAL '2' SECOND AND MaxBids.fired - INTERVAL '2' SECOND
 AND AuctionBids.num >= MaxBids.maxn;
