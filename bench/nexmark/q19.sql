-- Nexmark q19, auction top-N: the 10 highest bids of each auction
-- (ROW_NUMBER), an updating result. As Flink's; equal prices keep
-- arrival order.
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q19 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR, rank_number BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q19
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;
