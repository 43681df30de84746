-- Nexmark q12, processing-time windows: bids per bidder per 10 s window.
-- Adapted: Flink's windows are on processing time (PROCTIME()); Clink has
-- event-time windows only, so the windows are on the bid's dateTime.
-- The work per bid is the same (one tumbling window, one group per
-- bidder); results are deterministic where Flink's depend on arrival.
CREATE TABLE nexmark_q12 (bidder BIGINT, bid_count BIGINT, window_start BIGINT, window_end BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q12
SELECT bidder, COUNT(*) AS bid_count, window_start, window_end
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
