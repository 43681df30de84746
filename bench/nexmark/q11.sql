-- Nexmark q11, user sessions: bids per bidder per session (a session
-- ends after 10 s without a bid). As Flink's.
CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime BIGINT, endtime BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q11
SELECT B.bidder, COUNT(*) AS bid_count,
       SESSION_START(B.dateTime, INTERVAL '10' SECOND) AS starttime,
       SESSION_END(B.dateTime, INTERVAL '10' SECOND) AS endtime
FROM bid AS B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
