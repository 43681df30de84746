-- Nexmark q18, find last bid: the latest bid of each bidder on each
-- auction (deduplication with ROW_NUMBER), an updating result. As
-- Flink's; among bids of the same millisecond the first read stays (Clink
-- keeps arrival order for ties).
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q18 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, dateTime, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
